import { describe, expect, it } from 'vitest';
import { USAGE, UsageError, parseArgs } from '../../src/cli/args.js';
import { LOCAL_PRINCIPAL, authFromEnv } from '../../src/cli/auth.js';
import type { IncomingMessage } from 'node:http';

describe('turnstate arguments', () => {
  it('cli:args:serve — defaults, flags in both spellings, and environment fallbacks', () => {
    expect(parseArgs(['serve'], {})).toEqual({ kind: 'serve', args: { port: 8787, host: '127.0.0.1', dataDir: '.data' } });
    expect(parseArgs(['serve', '--port', '0', '--data-dir=/tmp/x', '--script', 's.json', '--host=0.0.0.0'], {})).toEqual({
      kind: 'serve',
      args: { port: 0, host: '0.0.0.0', dataDir: '/tmp/x', script: 's.json' },
    });
    expect(parseArgs(['serve'], { PORT: '9000', TURNSTATE_DATA_DIR: 'd' })).toMatchObject({ args: { port: 9000, dataDir: 'd' } });
    expect(parseArgs(['serve', '--allow-origin', 'https://app.example.com, http://localhost:5173'], {})).toMatchObject({
      args: { allowedOrigins: ['https://app.example.com', 'http://localhost:5173'] },
    });
    expect(parseArgs(['serve'], { TURNSTATE_ALLOWED_ORIGINS: 'https://a.example' })).toMatchObject({ args: { allowedOrigins: ['https://a.example'] } });
    expect(parseArgs(['serve', '--allow-host', 'Agents.Internal, box.lan'], {})).toMatchObject({ args: { allowedHosts: ['agents.internal', 'box.lan'] } });
    expect(parseArgs(['serve'], { TURNSTATE_ALLOWED_HOSTS: '*' })).toMatchObject({ args: { allowedHosts: ['*'] } });
    expect(parseArgs([], {}).kind).toBe('help');
    expect(parseArgs(['serve', '--help'], {}).kind).toBe('help');
  });

  it('cli:args:errors — unknown commands and options, missing values and bad ports are usage errors naming the problem', () => {
    expect(() => parseArgs(['launch'], {})).toThrow(new UsageError('unknown command "launch" (commands: serve, replay)'));
    expect(() => parseArgs(['serve', '--prot', '1'], {})).toThrow(/unknown option "--prot"/);
    expect(() => parseArgs(['serve', '--port'], {})).toThrow(/"--port" needs a value/);
    expect(() => parseArgs(['serve', '--port', 'abc'], {})).toThrow(/--port must be an integer/);
    expect(() => parseArgs(['serve', '--port', '70000'], {})).toThrow(/--port must be an integer/);
    expect(() => parseArgs(['serve', 'extra'], {})).toThrow(/unexpected argument "extra"/);
    expect(() => parseArgs(['serve', '--allow-origin', 'https://app.example.com/chat'], {})).toThrow(/--allow-origin: "https:\/\/app.example.com\/chat" is not an origin/);
    expect(() => parseArgs(['serve', '--allow-origin', 'app.example.com'], {})).toThrow(/is not an origin/);
    expect(() => parseArgs(['serve', '--allow-host', 'http://agents.internal:8787'], {})).toThrow(/--allow-host: "http:\/\/agents.internal:8787" is not a host name/);
  });

  it('cli:args:allow-origin-normalised — "comma-separated origins (https://app.example.com)": an origin written with capitals, its default port or a trailing slash is that origin; a path, query, fragment or credentials are still refused', () => {
    expect(parseArgs(['serve', '--allow-origin', 'https://App.Example.com,HTTPS://app.example.com:443,http://LOCALHOST:5173/,http://box.lan:80'], {})).toMatchObject({
      args: { allowedOrigins: ['https://app.example.com', 'https://app.example.com', 'http://localhost:5173', 'http://box.lan'] },
    });
    for (const bad of ['https://app.example.com/chat', 'https://app.example.com?x=1', 'https://app.example.com/?', 'https://app.example.com#top', 'https://ana:pw@app.example.com', 'https://ana@app.example.com', 'blob:https://app.example.com', 'app.example.com:443', 'null']) {
      expect(() => parseArgs(['serve', '--allow-origin', bad], {}), bad).toThrow(`--allow-origin: "${bad}" is not an origin`);
    }
  });

  it('cli:args:empty-env-unset — "an empty variable (HOST=) counts as unset": HOST=, PORT=, TURNSTATE_DATA_DIR= and the other variables give the defaults, not every interface and the current directory', () => {
    const empty = { HOST: '', PORT: '', TURNSTATE_DATA_DIR: '', TURNSTATE_PASSIVATE_AFTER_MS: '', TURNSTATE_ALLOWED_ORIGINS: '', TURNSTATE_ALLOWED_HOSTS: '' };
    expect(parseArgs(['serve'], empty)).toEqual({ kind: 'serve', args: { port: 8787, host: '127.0.0.1', dataDir: '.data' } });
    // Blank is empty too (`HOST= ` in an env file).
    expect(parseArgs(['serve'], { HOST: ' ', TURNSTATE_DATA_DIR: '  ', PORT: ' ' })).toEqual({ kind: 'serve', args: { port: 8787, host: '127.0.0.1', dataDir: '.data' } });
    // A flag still wins over its variable, and a set variable still counts.
    expect(parseArgs(['serve', '--host', '::1'], { HOST: '' })).toMatchObject({ args: { host: '::1' } });
    expect(parseArgs(['serve'], { HOST: '0.0.0.0', TURNSTATE_PASSIVATE_AFTER_MS: '0' })).toMatchObject({ args: { host: '0.0.0.0', passivateAfterMs: 0 } });
  });

  it('cli:args:env-named — "bad input gets a clear error that names what was wrong": an invalid environment value is named by its variable, not by the flag the user never typed', () => {
    expect(() => parseArgs(['serve'], { PORT: 'eighty' })).toThrow(new UsageError('PORT must be an integer from 0 to 65535, got "eighty"'));
    expect(() => parseArgs(['serve'], { TURNSTATE_PASSIVATE_AFTER_MS: '5m' })).toThrow(new UsageError('TURNSTATE_PASSIVATE_AFTER_MS must be a whole number of milliseconds (0: never), got "5m"'));
    expect(() => parseArgs(['serve'], { TURNSTATE_ALLOWED_ORIGINS: 'app.example.com' })).toThrow(/^TURNSTATE_ALLOWED_ORIGINS: "app.example.com" is not an origin/);
    expect(() => parseArgs(['serve'], { TURNSTATE_ALLOWED_HOSTS: 'http://x' })).toThrow(/^TURNSTATE_ALLOWED_HOSTS: "http:\/\/x" is not a host name/);
    // The flag, when it is the flag.
    expect(() => parseArgs(['serve', '--passivate-after', '5m'], {})).toThrow(/^--passivate-after must be a whole number/);
    expect(() => parseArgs(['serve', '--port', 'eighty'], { PORT: '9000' })).toThrow(/^--port must be an integer/);
  });

  it('cli:args:passivate-range — "--passivate-after agrees with createRuntime\'s passivateAfterMs": a whole number of milliseconds is taken (30 days too: it is compared with an idle time, not a timer), one past a safe integer refused naming the flag or variable', () => {
    expect(parseArgs(['serve', '--passivate-after', '2592000000'], {})).toMatchObject({ args: { passivateAfterMs: 2592000000 } });
    expect(() => parseArgs(['serve', '--passivate-after', '1.5'], {})).toThrow(new UsageError('--passivate-after must be a whole number of milliseconds (0: never), got "1.5"'));
    expect(() => parseArgs(['serve'], { TURNSTATE_PASSIVATE_AFTER_MS: '9007199254740994' })).toThrow(/^TURNSTATE_PASSIVATE_AFTER_MS must be a whole number of milliseconds \(0: never\)/);
  });

  it('cli:args:option-not-a-value — "--data-dir <dir>": an option followed by another option has no value (it does not take "--port" as the directory)', () => {
    expect(() => parseArgs(['serve', '--data-dir', '--port', '0'], {})).toThrow(new UsageError('option "--data-dir" needs a value (got the option "--port")'));
    expect(() => parseArgs(['serve', '--data-dir', '--port'], {})).toThrow(/option "--data-dir" needs a value/);
    expect(() => parseArgs(['serve', '--host', '--allow-host', 'box.lan'], {})).toThrow(/option "--host" needs a value/);
    // Written with "=", such a value is meant.
    expect(parseArgs(['serve', '--data-dir=--odd'], {})).toMatchObject({ args: { dataDir: '--odd' } });
  });

  it('cli:usage:public-url — "TURNSTATE_PUBLIC_URL: the base of signed artifact links": turnstate --help names every variable serve reads', () => {
    for (const variable of ['PORT', 'HOST', 'TURNSTATE_DATA_DIR', 'TURNSTATE_ALLOWED_ORIGINS', 'TURNSTATE_PASSIVATE_AFTER_MS', 'TURNSTATE_ALLOWED_HOSTS', 'TURNSTATE_PUBLIC_URL', 'TURNSTATE_API_KEYS', 'ANTHROPIC_API_KEY']) {
      expect(USAGE, variable).toContain(variable);
    }
  });

  it('cli:auth — without keys everyone is the local user; with keys a bearer token is required and maps to its principal', async () => {
    const req = (headers: Record<string, string>, url = '/') => ({ headers, url }) as unknown as IncomingMessage;
    expect(await authFromEnv(undefined)(req({}))).toEqual({ ok: true, principal: LOCAL_PRINCIPAL });
    const auth = authFromEnv(JSON.stringify({ k1: { userId: 'ana', tenantId: 'acme', attributes: { tier: 'trusted' } } }));
    expect(await auth(req({}))).toMatchObject({ ok: false, status: 401 });
    expect(await auth(req({ authorization: 'Bearer nope' }))).toMatchObject({ ok: false, status: 403 });
    expect(await auth(req({ authorization: 'Bearer k1' }))).toEqual({ ok: true, principal: { userId: 'ana', tenantId: 'acme', attributes: { tier: 'trusted' } } });
    expect(await auth(req({}, '/sessions/x/events?token=k1'))).toMatchObject({ ok: true });
    expect(() => authFromEnv('{not json')).toThrow(/TURNSTATE_API_KEYS must be JSON/);
  });

  it('cli:auth:principals-checked — a key whose principal is not an object with a userId string is refused at startup, naming the problem (it answered 500, or ran turns for nobody, on every request)', () => {
    for (const [bad, why] of [[null, 'is not an object'], ['ana', 'is not an object'], [{}, 'has no userId'], [{ userId: 'ana', tenantId: 7 }, 'tenantId that is not a string']] as const) {
      expect(() => authFromEnv(JSON.stringify({ 'k-good': { userId: 'bo' }, 'k-bad1': bad }))).toThrow(why);
    }
    // The token itself is not printed whole.
    expect(() => authFromEnv(JSON.stringify({ 'secret-token-123': null }))).toThrow(/"secr…"/);
  });

  it('cli:auth:unknown-field — "each an object with a userId string, and optionally tenantId and attributes; anything else stops the server at startup, naming the key": a misspelt tenantId ("tenant") would silently turn tenant isolation off', () => {
    const keys = (principal: unknown) => JSON.stringify({ 'k-good': { userId: 'bo', tenantId: 'acme' }, 'k-ana-123': principal });
    expect(() => authFromEnv(keys({ userId: 'ana', tenant: 'acme' }))).toThrow(
      'TURNSTATE_API_KEYS: the principal of key "k-an…" has an unknown field "tenant" (known: userId, tenantId, personId, attributes, roles)',
    );
    expect(() => authFromEnv(keys({ userId: 'ana', tenantID: 'acme' }))).toThrow(/key "k-an…" has an unknown field "tenantID"/);
    for (const attributes of ['trusted', ['tier'], null, 7]) {
      expect(() => authFromEnv(keys({ userId: 'ana', attributes })), JSON.stringify(attributes)).toThrow(
        /key "k-an…" has attributes that are not an object \(of attribute names to values, e\.g\. \{"tier": "trusted"\}\)/,
      );
    }
    expect(() => authFromEnv(keys({ userId: 'ana', roles: 'approver' }))).toThrow(/key "k-an…" has roles that are not an array of strings/);
    expect(() => authFromEnv(keys({ userId: 'ana', personId: 7 }))).toThrow(/key "k-an…" has a personId that is not a string/);
    // Every field a Principal has is accepted.
    const full = { userId: 'ana', tenantId: 'acme', personId: 'p-1', attributes: { tier: 'trusted' }, roles: ['approver'] };
    expect(() => authFromEnv(keys(full))).not.toThrow();
  });

  it('cli:auth:key-chars — "a key is required (`Authorization: Bearer <key>` …)": a key no client can send in that header as written (spaces at its edges or inside, non-ASCII, empty) stops the server at startup, naming it', () => {
    for (const bad of [' kS ', 'clé-ü', 'two words', '', 'tab\tkey']) {
      expect(() => authFromEnv(JSON.stringify({ 'k-good': { userId: 'bo' }, [bad]: { userId: 'ana' } })), JSON.stringify(bad)).toThrow(
        /TURNSTATE_API_KEYS: key ".*" is (empty|not printable ASCII without spaces); a client could not send it in an Authorization header/,
      );
    }
    expect(() => authFromEnv(JSON.stringify({ 'k-Ana_1.~!': { userId: 'ana' } }))).not.toThrow();
  });

  it('cli:auth:bearer-any-case — "Authorization: Bearer <key>": the scheme is case-insensitive (RFC 7235), so bearer and BEARER are the same key', async () => {
    const req = (headers: Record<string, string>) => ({ headers, url: '/' }) as unknown as IncomingMessage;
    const auth = authFromEnv(JSON.stringify({ k1: { userId: 'ana' } }));
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      expect(await auth(req({ authorization: `${scheme} k1` })), scheme).toEqual({ ok: true, principal: { userId: 'ana' } });
    }
    expect(await auth(req({ authorization: 'Bearer  k1 ' }))).toMatchObject({ ok: true });
    // Another scheme is no key: 401, as without the header.
    expect(await auth(req({ authorization: 'Basic azE6' }))).toMatchObject({ ok: false, status: 401 });
  });
});
