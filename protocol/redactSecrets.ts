/** What a credential is replaced with. */
export const REDACTED = '[redacted]';

/** Names of headers, query parameters and JSON fields whose value is a credential. */
const SECRET_NAME =
  '(?:proxy-)?authorization|x-api-key|x-goog-api-key|api[-_]?key|apikey|key|(?:access|refresh|id|auth|session)[-_]?token|token|client[-_]?secret|secret|password|passwd|cookie|set-cookie|sig|signature';
const SECRET_NAME_PATTERN = new RegExp(`^(?:${SECRET_NAME})$`, 'i');

/** Each rule, in order: what it finds and what it leaves of it. */
const RULES: ReadonlyArray<readonly [RegExp, string]> = [
  // URL userinfo: https://user:password@host/.
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]+@/gi, `$1${REDACTED}@`],
  // A header line or a JSON field named as a credential, quoted or not: `x-api-key: abc`, `"api_key":"abc"`.
  [
    new RegExp(
      `((?:^|[\\s{,;"'])(?:${SECRET_NAME})["']?\\s*[:=]\\s*["']?)(?:(?:Bearer|Basic|Token)\\s+)?[^\\s"',;}&<>]+`,
      'gim',
    ),
    `$1${REDACTED}`,
  ],
  // A query parameter named as a credential: ?key=..., &access_token=...
  [new RegExp(`([?&](?:${SECRET_NAME})=)[^&#\\s"'<>]*`, 'gi'), `$1${REDACTED}`],
  // An authorization scheme with its credentials, wherever it stands.
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{4,}/g, `$1 ${REDACTED}`],
  // Keys of the usual shapes: OpenAI/Anthropic/Stripe (sk-..., sk_live_...), GitHub, Google, AWS, Slack.
  [/\b(?:sk|pk|rk)[-_][A-Za-z0-9_-]{8,}/g, REDACTED],
  [/\bgh[pousr]_[A-Za-z0-9]{20,}/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{30,}/g, REDACTED],
  [/\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, REDACTED],
  [/\bxox[abposr]-[A-Za-z0-9-]{10,}/g, REDACTED],
];

/**
 * `text` with the credentials it may carry replaced by `[redacted]`: authorization schemes
 * (`Bearer ...`), headers and fields named as credentials (`Authorization`, `x-api-key`,
 * `"api_key": ...`), query parameters (`key=`, `token=`, `access_token=`, ...), URL userinfo,
 * and keys of well-known shapes (`sk-...`). For what may reach an event, a log line or an
 * error message; it cannot know every secret, so what is not meant for a reader is still
 * better kept from it.
 *
 * @example
 * redactSecrets('GET https://u:p@api.example.com/v1?key=abc: {"authorization":"Bearer sk-live-123456789"}');
 * // 'GET https://[redacted]@api.example.com/v1?key=[redacted]: {"authorization":"[redacted]"}'
 */
export function redactSecrets(text: string): string {
  let redacted = text;
  for (const [pattern, replacement] of RULES) redacted = redacted.replace(pattern, replacement);
  return redacted;
}

/**
 * A copy of a JSON value with every string passed through `redactSecrets` and the value of
 * every field named as a credential (`authorization`, `apiKey`, `token`, ...) replaced; nesting
 * past `maxDepth` is replaced too, so a hostile value costs a bounded walk.
 */
export function redactSecretsIn(value: unknown, maxDepth = 32): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (typeof value !== 'object' || value === null) return value;
  if (maxDepth <= 0) return REDACTED;
  if (Array.isArray(value)) return value.map((item) => redactSecretsIn(item, maxDepth - 1));
  const copy: Record<string, unknown> = {};
  for (const [name, item] of Object.entries(value)) {
    const safe = SECRET_NAME_PATTERN.test(name) && item !== null && typeof item !== 'object' ? REDACTED : item;
    // defineProperty: a field named `__proto__` stays a field, never a prototype.
    Object.defineProperty(copy, name, {
      value: safe === REDACTED ? REDACTED : redactSecretsIn(item, maxDepth - 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

/** A URL as it may be shown: no userinfo, credential query parameters redacted. */
export function redactURL(url: string | URL): string {
  return redactSecrets(String(url));
}
