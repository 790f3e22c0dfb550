import { describe, expect, it } from 'vitest';
import { REDACTED, redactSecrets, redactSecretsIn, redactURL } from './redactSecrets';

describe('redactSecrets', () => {
  it.each([
    ['Authorization: Bearer sk-live-abcdef123456', `Authorization: ${REDACTED}`],
    ['{"authorization":"Bearer abc.def.ghi"}', `{"authorization":"${REDACTED}"}`],
    ['x-api-key: k-1234567890', `x-api-key: ${REDACTED}`],
    ['"api_key": "secret-value"', `"api_key": "${REDACTED}"`],
    ['proxy said: Bearer eyJhbGciOi.J9.x', `proxy said: Bearer ${REDACTED}`],
    ['Incorrect API key provided: sk-proj-AbCdEf0123456789', `Incorrect API key provided: ${REDACTED}`],
    ['key sk_live_0123456789abcdef in use', `key ${REDACTED} in use`],
    ['https://user:pa55@api.example.com/v1', `https://${REDACTED}@api.example.com/v1`],
    ['https://x.test/v1?key=AIzaabc&alt=sse', `https://x.test/v1?key=${REDACTED}&alt=sse`],
    ['https://x.test/v1?alt=sse&access_token=abc#x', `https://x.test/v1?alt=sse&access_token=${REDACTED}#x`],
    ['https://x.test/v1?token=abc', `https://x.test/v1?token=${REDACTED}`],
  ])('redacts %s', (text, expected) => {
    expect(redactSecrets(text)).toBe(expected);
  });

  it('leaves text without credentials as it is', () => {
    const text = 'http://127.0.0.1:8080/v1/chat/completions answered 429: Rate limit reached, max_tokens 512';
    expect(redactSecrets(text)).toBe(text);
  });

  it('redacts strings and credential fields in a JSON value, without following __proto__', () => {
    const value = JSON.parse(
      '{"error":{"message":"bad Bearer sk-live-0123456789"},"headers":{"x-api-key":"abc","Accept":"*/*"},"__proto__":{"token":"t"},"n":[1,"sk-ant-api03-0123456789"]}',
    );
    const redacted = redactSecretsIn(value) as Record<string, unknown>;
    expect(JSON.parse(JSON.stringify(redacted))).toEqual(
      JSON.parse(
        `{"error":{"message":"bad Bearer ${REDACTED}"},"headers":{"x-api-key":"${REDACTED}","Accept":"*/*"},"__proto__":{"token":"${REDACTED}"},"n":[1,"${REDACTED}"]}`,
      ),
    );
    expect(Object.getPrototypeOf(redacted)).toBe(Object.prototype);
  });

  it('bounds the walk of a deep value', () => {
    let deep: unknown = 'sk-live-0123456789';
    for (let index = 0; index < 100; index += 1) deep = [deep];
    let walked = redactSecretsIn(deep, 5);
    for (let index = 0; index < 5; index += 1) walked = (walked as unknown[])[0];
    expect(walked).toBe(REDACTED);
  });

  it('redactURL keeps the address, not its credentials', () => {
    expect(redactURL(new URL('https://a:b@api.test/v1?key=k1'))).toBe(
      `https://${REDACTED}@api.test/v1?key=${REDACTED}`,
    );
  });
});
