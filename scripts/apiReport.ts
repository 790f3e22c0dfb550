// The API report of each package entry: every exported name of the entry's built
// declarations (dist/*.d.ts), with its kind and its signature as the TypeScript checker prints
// it. `npm run api` writes them to api/, and tests/apiReport.test.ts holds api/ to the build,
// so a change to the public surface shows in review as a change to api/.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';

export const API_DIRECTORY = 'api';

/** One entry of package.json "exports": its subpath and its ESM declaration file. */
export interface ApiEntry {
  subpath: string;
  /** Relative to the package root, as package.json names it (`./dist/react.d.ts`). */
  typesFile: string;
}

type ExportTarget = string | { [condition: string]: ExportTarget };

function typesOf(target: ExportTarget | undefined): string | undefined {
  if (target === undefined || typeof target === 'string') return undefined;
  const conditional = target.import ?? target.default;
  if (typeof target.types === 'string') return target.types;
  return typesOf(conditional);
}

/** The entries of package.json "exports" that have declarations, in the order it lists them. */
export function packageApiEntries(root: string): ApiEntry[] {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    exports: Record<string, ExportTarget>;
  };
  return Object.entries(manifest.exports).flatMap(([subpath, target]) => {
    const typesFile = typesOf(target);
    return typesFile === undefined ? [] : [{ subpath, typesFile }];
  });
}

/** `.` → `index.api.md`, `./providers/agui` → `providers-agui.api.md`: the subpath, never the package name. */
export function apiReportFileName(subpath: string): string {
  const name = subpath === '.' ? 'index' : subpath.replace(/^\.\//, '').replaceAll('/', '-');
  return `${name}.api.md`;
}

const NODE_FLAGS =
  ts.NodeBuilderFlags.NoTruncation |
  ts.NodeBuilderFlags.IgnoreErrors |
  ts.NodeBuilderFlags.UseAliasDefinedOutsideCurrentScope |
  ts.NodeBuilderFlags.WriteTypeArgumentsOfSignature |
  // An object type over several lines, one member a line, so a diff shows the member that changed.
  ts.NodeBuilderFlags.MultilineObjectLiterals;

/**
 * Prints types and signatures as the checker builds them, made independent of how the build
 * split the declarations and of the order the checker met the types: union members sorted,
 * `import("./chunk-hash")` qualifiers dropped (types are printed by name), no absolute path.
 */
class SurfacePrinter {
  private readonly printer = ts.createPrinter({ removeComments: true, omitTrailingSemicolon: false });
  private readonly scratch = ts.createSourceFile('report.d.ts', '', ts.ScriptTarget.Latest);

  constructor(private readonly checker: ts.TypeChecker) {}

  type(type: ts.Type, flags = 0): string {
    const node = this.checker.typeToTypeNode(type, undefined, NODE_FLAGS | flags);
    return node === undefined ? this.checker.typeToString(type) : this.print(node);
  }

  typeNode(node: ts.TypeNode): string {
    return this.type(this.checker.getTypeFromTypeNode(node));
  }

  /** `(a: A): R`, or `<T>(a: T): R`, without a name. */
  signature(signature: ts.Signature): string {
    // Built as a method signature, which the printer writes without a name: `(a: A): R;`.
    const node = this.checker.signatureToSignatureDeclaration(
      signature,
      ts.SyntaxKind.MethodSignature,
      undefined,
      NODE_FLAGS,
    );
    if (node === undefined) return this.checker.signatureToString(signature);
    return this.print(node).replace(/;$/, '');
  }

  typeParameters(declaration: ts.DeclarationWithTypeParameterChildren | ts.TypeAliasDeclaration): string {
    const parameters = declaration.typeParameters;
    if (parameters === undefined || parameters.length === 0) return '';
    const printed = parameters.map((parameter) => {
      const constraint = parameter.constraint ? ` extends ${this.typeNode(parameter.constraint)}` : '';
      const fallback = parameter.default ? ` = ${this.typeNode(parameter.default)}` : '';
      return `${parameter.name.text}${constraint}${fallback}`;
    });
    return `<${printed.join(', ')}>`;
  }

  private print(node: ts.Node): string {
    const sorted = ts.transform(node, [sortUnions]).transformed[0]!;
    const text = this.printer.printNode(ts.EmitHint.Unspecified, sorted, this.scratch);
    // The printer indents by four; the report by two.
    const lines = text.replace(/\r\n/g, '\n').replace(/^(?: {4})+/gm, (indent) => ' '.repeat(indent.length / 2));
    return normaliseImports(lines);
  }
}

/** Union members in text order, so a report does not change with the order the checker made its types. */
const sortUnions: ts.TransformerFactory<ts.Node> = (context) => {
  const printer = ts.createPrinter({ removeComments: true });
  const scratch = ts.createSourceFile('union.d.ts', '', ts.ScriptTarget.Latest);
  const visit = (node: ts.Node): ts.Node => {
    const visited = ts.visitEachChild(node, visit, context);
    if (ts.isParameter(visited) && visited.questionToken && visited.type && ts.isUnionTypeNode(visited.type)) {
      // `options?: X` is how the declaration reads; the checker adds the `undefined` it implies.
      const defined = visited.type.types.filter((member) => member.kind !== ts.SyntaxKind.UndefinedKeyword);
      const type = defined.length === 1 ? defined[0]! : context.factory.createUnionTypeNode(defined);
      const { modifiers, dotDotDotToken, name, questionToken, initializer } = visited;
      return context.factory.updateParameterDeclaration(
        visited,
        modifiers,
        dotDotDotToken,
        name,
        questionToken,
        type,
        initializer,
      );
    }
    if (!ts.isUnionTypeNode(visited)) return visited;
    const keyed = visited.types.map((member) => ({
      member,
      key: printer.printNode(ts.EmitHint.Unspecified, member, scratch),
    }));
    keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return context.factory.updateUnionTypeNode(
      visited,
      context.factory.createNodeArray(keyed.map(({ member }) => member)),
    );
  };
  return visit;
};

/** `import("./chunk-AbC123").X` → `X`; `import("/abs/node_modules/pkg/dist/x").Y` → `import("pkg").Y`. */
function normaliseImports(text: string): string {
  return text.replace(/import\("([^"]+)"\)\./g, (_match, specifier: string) => {
    const inModules = specifier.lastIndexOf('node_modules/');
    if (inModules !== -1) {
      const rest = specifier.slice(inModules + 'node_modules/'.length).split('/');
      const name = rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
      return `import("${name}").`;
    }
    if (specifier.startsWith('.') || specifier.startsWith('/') || /^[A-Za-z]:/.test(specifier)) return '';
    return `import("${specifier}").`;
  });
}

function isPrivate(member: ts.ClassElement): boolean {
  if (member.name !== undefined && ts.isPrivateIdentifier(member.name)) return true;
  const flags = ts.getCombinedModifierFlags(member as ts.Declaration);
  return (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0;
}

function modifiers(member: ts.Node): string {
  const flags = ts.getCombinedModifierFlags(member as ts.Declaration);
  return `${flags & ts.ModifierFlags.Static ? 'static ' : ''}${flags & ts.ModifierFlags.Readonly ? 'readonly ' : ''}`;
}

function memberName(name: ts.PropertyName | undefined): string {
  if (name === undefined) return '';
  if (ts.isComputedPropertyName(name)) return `[${name.expression.getText()}]`;
  return name.getText();
}

/** The lines of one member of an interface or a class, or none when it is not public. */
function memberLines(checker: ts.TypeChecker, printer: SurfacePrinter, member: ts.Node): string[] {
  if (ts.isClassElement(member) && isPrivate(member)) return [];
  const prefix = modifiers(member);
  if (ts.isPropertySignature(member) || ts.isPropertyDeclaration(member)) {
    const symbol = checker.getSymbolAtLocation(member.name);
    const type = symbol ? checker.getTypeOfSymbol(symbol) : undefined;
    const optional = member.questionToken ? '?' : '';
    // An optional property's type holds `undefined` the declaration did not write.
    const printed = member.type !== undefined ? printer.typeNode(member.type) : type ? printer.type(type) : 'unknown';
    return [`${prefix}${memberName(member.name)}${optional}: ${printed};`];
  }
  if (
    ts.isMethodSignature(member) ||
    ts.isMethodDeclaration(member) ||
    ts.isCallSignatureDeclaration(member) ||
    ts.isConstructSignatureDeclaration(member) ||
    ts.isConstructorDeclaration(member) ||
    ts.isGetAccessorDeclaration(member) ||
    ts.isSetAccessorDeclaration(member)
  ) {
    const signature = checker.getSignatureFromDeclaration(member);
    if (signature === undefined) return [];
    const printed = printer.signature(signature);
    const optional = 'questionToken' in member && member.questionToken ? '?' : '';
    if (ts.isConstructorDeclaration(member)) return [`constructor${printed.replace(/: [^:]*$/, '')};`];
    if (ts.isConstructSignatureDeclaration(member)) return [`new ${printed};`];
    if (ts.isCallSignatureDeclaration(member)) return [`${printed};`];
    const accessor = ts.isGetAccessorDeclaration(member) ? 'get ' : ts.isSetAccessorDeclaration(member) ? 'set ' : '';
    return [`${prefix}${accessor}${memberName(member.name)}${optional}${printed};`];
  }
  if (ts.isIndexSignatureDeclaration(member)) {
    const parameters = member.parameters.map(
      (parameter) => `${parameter.name.getText()}: ${parameter.type ? printer.typeNode(parameter.type) : 'string'}`,
    );
    return [`${prefix}[${parameters.join(', ')}]: ${printer.typeNode(member.type)};`];
  }
  return [];
}

function block(head: string, lines: string[]): string {
  return lines.length === 0
    ? `${head} {}`
    : [`${head} {`, ...lines.map((line) => `  ${line.replaceAll('\n', '\n  ')}`), '}'].join('\n');
}

/** The declarations of one exported name, one block per meaning (a class and a type of the same name are two). */
function describeExport(checker: ts.TypeChecker, printer: SurfacePrinter, name: string, exported: ts.Symbol): string[] {
  const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  const declarations = symbol.declarations ?? [];
  const blocks: string[] = [];

  for (const declaration of declarations.filter(ts.isInterfaceDeclaration).slice(0, 1)) {
    const declared = checker.getDeclaredTypeOfSymbol(symbol);
    const bases = declared.isClassOrInterface() ? (checker.getBaseTypes(declared) ?? []) : [];
    const heritage = bases.length ? ` extends ${bases.map((base) => printer.type(base)).join(', ')}` : '';
    const members = declarations
      .filter(ts.isInterfaceDeclaration)
      .flatMap((part) => part.members.flatMap((member) => memberLines(checker, printer, member)));
    blocks.push(block(`interface ${name}${printer.typeParameters(declaration)}${heritage}`, members));
  }
  for (const declaration of declarations.filter(ts.isClassDeclaration).slice(0, 1)) {
    const declared = checker.getDeclaredTypeOfSymbol(symbol);
    const bases = declared.isClassOrInterface() ? (checker.getBaseTypes(declared) ?? []) : [];
    const heritage = bases.length ? ` extends ${bases.map((base) => printer.type(base)).join(', ')}` : '';
    const abstract = ts.getCombinedModifierFlags(declaration) & ts.ModifierFlags.Abstract ? 'abstract ' : '';
    const members = declaration.members.flatMap((member) => memberLines(checker, printer, member));
    blocks.push(block(`${abstract}class ${name}${printer.typeParameters(declaration)}${heritage}`, members));
  }
  for (const declaration of declarations.filter(ts.isTypeAliasDeclaration).slice(0, 1)) {
    const type = checker.getTypeFromTypeNode(declaration.type);
    const printed = printer.type(type, ts.NodeBuilderFlags.InTypeAlias);
    blocks.push(`type ${name}${printer.typeParameters(declaration)} = ${printed};`);
  }
  for (const declaration of declarations.filter(ts.isEnumDeclaration).slice(0, 1)) {
    const members = declaration.members.map((member) => {
      const value = checker.getConstantValue(member);
      return `${member.name.getText()}${value === undefined ? '' : ` = ${JSON.stringify(value)}`},`;
    });
    const constant = ts.getCombinedModifierFlags(declaration) & ts.ModifierFlags.Const ? 'const ' : '';
    blocks.push(block(`${constant}enum ${name}`, members));
  }
  const functions = declarations.filter(ts.isFunctionDeclaration);
  if (functions.length > 0) {
    const signatures = checker.getSignaturesOfType(checker.getTypeOfSymbol(symbol), ts.SignatureKind.Call);
    blocks.push(signatures.map((signature) => `function ${name}${printer.signature(signature)};`).join('\n'));
  }
  for (const declaration of declarations.filter(ts.isVariableDeclaration).slice(0, 1)) {
    const keyword = ts.getCombinedNodeFlags(declaration) & ts.NodeFlags.Const ? 'const' : 'let';
    blocks.push(`${keyword} ${name}: ${printer.type(checker.getTypeOfSymbol(symbol))};`);
  }
  if (symbol.flags & ts.SymbolFlags.Module && blocks.length === 0) {
    const names = checker
      .getExportsOfModule(symbol)
      .map((member) => member.name)
      .sort(compareText);
    const origin = declarations.find(ts.isSourceFile) ? ' (a module namespace)' : '';
    blocks.push(
      block(
        `namespace ${name}${origin}`,
        names.map((member) => `${member},`),
      ),
    );
  }
  if (blocks.length === 0)
    blocks.push(`${name}: ${printer.type(checker.getTypeOfSymbol(symbol))}; // kind ${symbol.flags}`);
  return blocks;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Types first, then values, each by name: the order a reader looks a name up in. */
function exportRank(checker: ts.TypeChecker, exported: ts.Symbol): number {
  const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  return symbol.flags & (ts.SymbolFlags.Type | ts.SymbolFlags.Class | ts.SymbolFlags.Enum) ? 0 : 1;
}

function reportText(entry: ApiEntry, body: string[]): string {
  const typesFile = entry.typesFile.replace(/^\.\//, '');
  return [
    `# API report: \`${entry.subpath}\``,
    '',
    `Generated by \`npm run api\` from \`${typesFile}\` (after \`npm run build\`); do not edit.`,
    'Each exported name with its kind and its signature as the TypeScript checker prints it.',
    '',
    '```ts',
    body.join('\n\n'),
    '```',
    '',
  ].join('\n');
}

/**
 * The reports of the given entries, by path (`api/react.api.md`), from one program over all
 * their declaration files.
 */
export function apiReports(root: string, entries: readonly ApiEntry[]): Map<string, string> {
  const files = entries.map(({ typesFile }) => resolve(root, typesFile));
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
    types: ['node'],
    strict: true,
    exactOptionalPropertyTypes: true,
    skipLibCheck: true,
    noEmit: true,
  };
  // `types: ['node']` is looked up from the current directory: the package's, wherever the
  // script runs from, so `fetch` and node's types are those a consumer of the package sees.
  const host = ts.createCompilerHost(options);
  host.getCurrentDirectory = () => resolve(root);
  const program = ts.createProgram({ rootNames: files, options, host });
  const checker = program.getTypeChecker();
  const printer = new SurfacePrinter(checker);
  const reports = new Map<string, string>();
  entries.forEach((entry, index) => {
    const source = program.getSourceFile(files[index]!);
    const module = source && checker.getSymbolAtLocation(source);
    if (module === undefined) throw new Error(`No declarations for ${entry.subpath} at ${entry.typesFile}`);
    const exports = checker
      .getExportsOfModule(module)
      .sort((a, b) => exportRank(checker, a) - exportRank(checker, b) || compareText(a.name, b.name));
    const body = exports.map((exported) => describeExport(checker, printer, exported.name, exported).join('\n'));
    reports.set(`${API_DIRECTORY}/${apiReportFileName(entry.subpath)}`, reportText(entry, body));
  });
  return reports;
}

/** A readable line diff of a committed report against the built one (`-` committed, `+` built). */
export function lineDiff(committed: string, built: string, path: string): string {
  const before = committed.split('\n');
  const after = built.split('\n');
  if (before.at(-1) === '') before.pop();
  if (after.at(-1) === '') after.pop();
  // Longest common subsequence, from the end, so the walk below goes forward.
  const lengths = Array.from({ length: before.length + 1 }, () => new Uint32Array(after.length + 1));
  for (let i = before.length - 1; i >= 0; i--) {
    for (let j = after.length - 1; j >= 0; j--) {
      lengths[i]![j] =
        before[i] === after[j] ? lengths[i + 1]![j + 1]! + 1 : Math.max(lengths[i + 1]![j]!, lengths[i]![j + 1]!);
    }
  }
  const lines: { mark: ' ' | '-' | '+'; text: string }[] = [];
  let i = 0;
  let j = 0;
  while (i < before.length || j < after.length) {
    if (i < before.length && j < after.length && before[i] === after[j]) {
      lines.push({ mark: ' ', text: before[i++]! });
      j++;
    } else if (i < before.length && (j === after.length || lengths[i + 1]![j]! >= lengths[i]![j + 1]!)) {
      lines.push({ mark: '-', text: before[i++]! });
    } else {
      lines.push({ mark: '+', text: after[j++]! });
    }
  }
  // Three lines of context around each change; `...` where unchanged lines are left out.
  const near = lines.map((_line, index) =>
    lines.slice(Math.max(0, index - 3), index + 4).some(({ mark }) => mark !== ' '),
  );
  const shown: string[] = [`--- ${path} (committed)`, `+++ ${path} (built)`];
  lines.forEach(({ mark, text }, index) => {
    if (near[index]) shown.push(`${mark} ${text}`);
    else if (index > 0 && near[index - 1]) shown.push('...');
  });
  return `${shown.join('\n')}\n`;
}

/** The reports that differ from api/ (missing, changed, or committed for no entry), each with its diff. */
export function apiReportDifferences(root: string, reports: Map<string, string>): { path: string; diff: string }[] {
  const directory = join(root, API_DIRECTORY);
  const differences: { path: string; diff: string }[] = [];
  for (const [path, text] of reports) {
    const file = join(root, path);
    const committed = existsSync(file) ? readFileSync(file, 'utf8') : '';
    if (committed !== text) differences.push({ path, diff: lineDiff(committed, text, path) });
  }
  const committedPaths = existsSync(directory)
    ? readdirSync(directory)
        .filter((name) => name.endsWith('.api.md'))
        .map((name) => `${API_DIRECTORY}/${name}`)
    : [];
  for (const path of committedPaths.filter((path) => !reports.has(path)).sort(compareText)) {
    differences.push({ path, diff: `--- ${path} (committed for no entry of package.json "exports")\n` });
  }
  return differences;
}
