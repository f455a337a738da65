/**
 * The base URL of signed artifact links (docs/concepts/artifacts.md, artifacts:link:base-url). A
 * base URL ending in an empty `?` or `#` has no query or fragment by the URL parser (search and
 * hash are ''), yet everything appended after it lands in them: `https://desk.example.com/?` gave
 * links whose path is `/` and whose exp and sig the route never sees (found by a review session).
 */
import { describe, expect, it } from 'vitest';
import { createArtifactLinks } from '../../src/envelope/artifact-links.js';

const SECRET = 'x'.repeat(32);

describe('artifact links: the base URL', () => {
  it('artifacts:link:base-url — "baseUrl must be an http(s) URL without credentials, query or fragment": an empty ? or # is refused with artifact.links_invalid, as a query or fragment is', () => {
    for (const baseUrl of ['https://desk.example.com/?', 'https://desk.example.com/#', 'https://desk.example.com/app/?', 'https://desk.example.com?#', 'https://desk.example.com/?x=1', 'https://desk.example.com/#top']) {
      expect(() => createArtifactLinks({ baseUrl, secret: SECRET }), baseUrl).toThrow(expect.objectContaining({ code: 'artifact.links_invalid', message: expect.stringContaining('baseUrl must be an http(s) URL without credentials, query or fragment') }));
      // A base URL given as a function is checked when a link is made.
      const late = createArtifactLinks({ baseUrl: () => baseUrl, secret: SECRET });
      expect(() => late.url('art_abc'), baseUrl).toThrow(expect.objectContaining({ code: 'artifact.links_invalid' }));
    }
    for (const [baseUrl, link] of [
      ['https://desk.example.com/', 'https://desk.example.com/artifacts/art_abc'],
      ['https://desk.example.com:443/agents/', 'https://desk.example.com/agents/artifacts/art_abc'],
      ['HTTPS://Desk.Example.com', 'https://desk.example.com/artifacts/art_abc'],
    ] as const) {
      const u = new URL(createArtifactLinks({ baseUrl, secret: SECRET, now: () => 0 }).url('art_abc'));
      expect(`${u.origin}${u.pathname}`, baseUrl).toBe(link);
      expect(u.searchParams.get('exp'), baseUrl).toBe(String(7 * 24 * 3600));
    }
  });
});

describe('artifact links: the lifetime', () => {
  it('artifacts:link:ttl-shown — "ttlSeconds must be a whole number of seconds from 1 to 315360000": the refusal shows the value received, a string quoted and -0 as -0, not as the number String() makes of them', () => {
    for (const [ttlSeconds, shown] of [['1000', '"1000"'], [-0, '-0'], [Number.NaN, 'NaN'], [1.5, '1.5'], [2 ** 31, '2147483648']] as const) {
      expect(() => createArtifactLinks({ baseUrl: 'https://desk.example.com', secret: SECRET, ttlSeconds: ttlSeconds as number }), shown).toThrow(
        expect.objectContaining({ code: 'artifact.links_invalid', message: expect.stringContaining(`ttlSeconds must be a whole number of seconds from 1 to 315360000 (10 years), got ${shown}`) }),
      );
    }
  });
});
