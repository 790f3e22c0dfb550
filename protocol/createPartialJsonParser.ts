type Frame =
  | { kind: 'object'; value: Record<string, unknown>; key: string | undefined }
  | { kind: 'array'; value: unknown[] };

type State =
  | 'value'
  | 'firstArrayValue'
  | 'objectKey'
  | 'firstObjectKey'
  | 'colon'
  | 'afterValue'
  | 'string'
  | 'escape'
  | 'unicode'
  | 'number'
  | 'literal'
  | 'done'
  | 'error';

const NUMBER_CHARS = /[0-9+\-.eE]/;
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const LITERALS: Readonly<Record<string, unknown>> = { true: true, false: false, null: null };
const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};
const WHITESPACE = new Set([' ', '\t', '\n', '\r']);

function setOwn(record: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  else record[key] = value;
}

export interface PartialJsonParser {
  /** Consumes more text; each character is read once, so the total cost is linear. */
  feed(text: string): void;
  /**
   * The value so far: complete parts as parsed, an unfinished string as far as it goes,
   * unfinished keys, literals and numbers left out. A new object each call for the parts
   * still open; closed parts are shared and never change.
   */
  value(): unknown;
  /** The text is complete: a number still being read ends here. */
  end(): void;
  /** Why the text stopped being JSON, once it has. */
  readonly error: string | undefined;
  /** Whether a complete JSON value has been read. */
  readonly done: boolean;
}

/**
 * An incremental JSON parser for text that arrives in pieces (streamed tool-call
 * arguments): it never re-reads what it has read, unlike parsing the whole prefix again
 * for every delta, which is quadratic.
 *
 * @example
 * const parser = createPartialJsonParser();
 * parser.feed('{"city":"Par');
 * parser.value(); // { city: 'Par' }
 * parser.feed('is","days":[1,');
 * parser.value(); // { city: 'Paris', days: [1] }
 */
export function createPartialJsonParser(): PartialJsonParser {
  const stack: Frame[] = [];
  let state: State = 'value';
  let buffer = '';
  let stringRole: 'key' | 'value' = 'value';
  let unicode = '';
  let root: unknown;
  let error: string | undefined;
  let offset = 0;

  const fail = (reason: string) => {
    error = `at ${offset}: ${reason}`;
    state = 'error';
  };

  const complete = (value: unknown) => {
    const top = stack[stack.length - 1];
    if (top === undefined) {
      root = value;
      state = 'done';
      return;
    }
    if (top.kind === 'object') {
      setOwn(top.value, top.key as string, value);
      top.key = undefined;
    } else {
      top.value.push(value);
    }
    state = 'afterValue';
  };

  const startValue = (char: string): void => {
    if (char === '{') {
      stack.push({ kind: 'object', value: {}, key: undefined });
      state = 'firstObjectKey';
    } else if (char === '[') {
      stack.push({ kind: 'array', value: [] });
      state = 'firstArrayValue';
    } else if (char === '"') {
      stringRole = 'value';
      buffer = '';
      state = 'string';
    } else if (char === '-' || (char >= '0' && char <= '9')) {
      buffer = char;
      state = 'number';
    } else if (char === 't' || char === 'f' || char === 'n') {
      buffer = char;
      state = 'literal';
    } else {
      fail(`unexpected ${JSON.stringify(char)}`);
    }
  };

  const close = (char: string): boolean => {
    const top = stack[stack.length - 1];
    if ((char === '}' && top?.kind === 'object') || (char === ']' && top?.kind === 'array')) {
      stack.pop();
      complete(top.value);
      return true;
    }
    return false;
  };

  const endString = () => {
    if (stringRole === 'key') {
      const top = stack[stack.length - 1];
      if (top?.kind === 'object') top.key = buffer;
      state = 'colon';
    } else {
      complete(buffer);
    }
    buffer = '';
  };

  const step = (char: string): void => {
    switch (state) {
      case 'string':
        if (char === '"') endString();
        else if (char === '\\') state = 'escape';
        else buffer += char;
        return;
      case 'escape': {
        if (char === 'u') {
          unicode = '';
          state = 'unicode';
          return;
        }
        const escaped = ESCAPES[char];
        if (escaped === undefined) {
          fail(`invalid escape \\${char}`);
          return;
        }
        buffer += escaped;
        state = 'string';
        return;
      }
      case 'unicode':
        if (!/[0-9a-fA-F]/.test(char)) {
          fail('invalid \\u escape');
          return;
        }
        unicode += char;
        if (unicode.length === 4) {
          buffer += String.fromCharCode(Number.parseInt(unicode, 16));
          state = 'string';
        }
        return;
      case 'number':
        if (NUMBER_CHARS.test(char)) {
          buffer += char;
          return;
        }
        if (!JSON_NUMBER.test(buffer)) {
          fail(`invalid number ${buffer}`);
          return;
        }
        complete(Number(buffer));
        buffer = '';
        step(char);
        return;
      case 'literal': {
        buffer += char;
        const match = Object.keys(LITERALS).find((literal) => literal.startsWith(buffer));
        if (match === undefined) {
          fail(`invalid literal ${buffer}`);
          return;
        }
        if (match === buffer) {
          buffer = '';
          complete(LITERALS[match]);
        }
        return;
      }
      default:
        break;
    }
    if (WHITESPACE.has(char)) return;
    switch (state) {
      case 'value':
        startValue(char);
        return;
      case 'firstArrayValue':
        if (close(char)) return;
        startValue(char);
        return;
      case 'firstObjectKey':
      case 'objectKey':
        // Only the first key may instead close the object: `{"a":1,}` is not JSON.
        if (state === 'firstObjectKey' && close(char)) return;
        if (char !== '"') {
          fail(`expected a key, got ${JSON.stringify(char)}`);
          return;
        }
        stringRole = 'key';
        buffer = '';
        state = 'string';
        return;
      case 'colon':
        if (char !== ':') {
          fail(`expected ":", got ${JSON.stringify(char)}`);
          return;
        }
        state = 'value';
        return;
      case 'afterValue': {
        if (close(char)) return;
        if (char !== ',') {
          fail(`expected "," or a closing bracket, got ${JSON.stringify(char)}`);
          return;
        }
        state = stack[stack.length - 1]?.kind === 'object' ? 'objectKey' : 'value';
        return;
      }
      case 'done':
        fail(`unexpected ${JSON.stringify(char)} after the value`);
        return;
      default:
        return;
    }
  };

  return {
    feed(text) {
      for (const char of text) {
        if (state === 'error') return;
        step(char);
        offset += char.length;
      }
    },
    end() {
      if (state === 'number') {
        if (!JSON_NUMBER.test(buffer)) {
          fail(`invalid number ${buffer}`);
          return;
        }
        complete(Number(buffer));
        buffer = '';
      }
      if (state !== 'done' && state !== 'error') fail('the text ended before the value did');
    },
    value() {
      if (state === 'done' && stack.length === 0) return root;
      let child: unknown;
      if ((state === 'string' || state === 'escape' || state === 'unicode') && stringRole === 'value') child = buffer;
      else if (state === 'number' && JSON_NUMBER.test(buffer)) child = Number(buffer);
      for (let index = stack.length - 1; index >= 0; index -= 1) {
        const frame = stack[index] as Frame;
        if (frame.kind === 'object') {
          const copy = { ...frame.value };
          if (child !== undefined && frame.key !== undefined) setOwn(copy, frame.key, child);
          child = copy;
        } else {
          const copy = frame.value.slice();
          if (child !== undefined) copy.push(child);
          child = copy;
        }
      }
      return child;
    },
    get error() {
      return error;
    },
    get done() {
      return state === 'done';
    },
  };
}
