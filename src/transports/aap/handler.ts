/**
 * The AAP (protocol version 3) HTTP handler: `GET /meta`, `GET|POST /sessions`,
 * `GET|DELETE /sessions/{id}`, `GET /sessions/{id}/history`, `POST /sessions/{id}/turns`.
 * Every response outside a running SSE stream is JSON; errors are `{ error: { code, message, path? } }`.
 *
 * Contract: the handler resolves `false` only for paths it does not serve, so it composes
 * with other transports on one server. Sessions of another tenant are 404, like unknown ones.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SessionHandle } from '../../api.js';
import { TurnstateError } from '../../errors.js';
import { sameTenant, type Principal, type SessionRecord } from '../../types.js';
import {
  DEFAULT_MAX_BODY_BYTES,
  HttpError,
  Router,
  readJsonBody,
  requestUrl,
  sendError,
  sendJson,
  sendNoContent,
  type RouteParams,
} from '../http.js';
import { authenticateRequest, visibleSession } from '../access.js';
import {
  agentInfo,
  checkClientTools,
  checkConsumes,
  checkOptions,
  checkServerTools,
  redactOptions,
  resolveAgent,
  type AapAgentConfig,
  type ResolvedAgent,
} from './agents.js';
import { MessageBuilder } from './messages.js';
import { checkAapOptions, type AapOptions } from './options.js';
import { createDelivery } from '../../envelope/delivery.js';
import { AapProjector, type PartClass } from './projector.js';
import { parseCreateSessionRequest, parseTurnRequest } from './schema.js';
import { AAP_METADATA_KEY, SessionConfigs, type AapSessionConfig } from './session-config.js';
import { RunningTurns, runTurnRequest } from './turns.js';
import { AAP_PROTOCOL_VERSION, STREAM_MODES, type MetaResponse, type SessionResponse, type StreamMode } from './types.js';

export type { AapOptions } from './options.js';

export type AapHandler = ((req: IncomingMessage, res: ServerResponse) => Promise<boolean>) & {
  /**
   * Stop accepting turns; running streams finish within `closeGraceMs`, then each still running
   * ends with `turn_stop {"stopReason":"error"}` (a `none` response: that body).
   */
  close(): Promise<void>;
};

interface RequestCtx {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
}

const PAGE_SIZE = 100;

/** Builds the AAP request handler for a node:http server (or any framework exposing req/res). */
export function createAapHandler(opts: AapOptions): AapHandler {
  checkAapOptions(opts);
  const { runtime } = opts;
  const maxBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const modes = opts.streamModes ?? [...STREAM_MODES];
  const configs = new SessionConfigs(runtime);
  const inflight = new Set<Promise<unknown>>();
  const running = new RunningTurns();
  let closing = false;

  const agentConfigs = (): AapAgentConfig[] =>
    opts.agents ?? runtime.registries.actors.list().map((a) => ({ name: a.name, ...(a.description === undefined ? {} : { description: a.description }) }));
  const findAgent = (name: string): ResolvedAgent | undefined => {
    const config = agentConfigs().find((a) => a.name === name);
    return config === undefined ? undefined : resolveAgent(runtime.registries, config);
  };
  const classify: (partType: string) => PartClass = createDelivery(runtime.registries.partTypes).transcript;

  const principalOf = async (ctx: RequestCtx): Promise<Principal | undefined> => authenticateRequest(ctx.req, ctx.res, opts.authenticate);

  /** The session if it exists and belongs to the principal's tenant; else 404 (503 `runtime.closed` once the runtime is closed). */
  const sessionFor = async (id: string, principal: Principal): Promise<SessionHandle> => {
    const handle = await visibleSession(runtime, principal, id);
    if (handle === undefined) {
      throw new HttpError(404, 'session.not_found', `session "${id}" not found`);
    }
    return handle;
  };

  const sessionResponse = async (session: SessionHandle | SessionRecord): Promise<SessionResponse> => {
    const config = await configs.get(session);
    const agent = findAgent(config.agent.name);
    const out: SessionResponse = { sessionId: session.id, agent: { name: config.agent.name } };
    if (config.agent.tools !== undefined) out.agent.tools = config.agent.tools;
    const options = redactOptions(agent, config.agent.options);
    if (options !== undefined) out.agent.options = options;
    if (config.tools.length > 0) out.tools = config.tools;
    if (config.consumes !== undefined) out.consumes = config.consumes;
    return out;
  };

  const router = new Router<RequestCtx>(opts.basePath ?? '');

  router.add('GET', '/meta', async (ctx) => {
    if (!opts.publicMeta && (await principalOf(ctx)) === undefined) return;
    const body: MetaResponse = {
      version: AAP_PROTOCOL_VERSION,
      agents: agentConfigs().map((c) => agentInfo(resolveAgent(runtime.registries, c), modes, (name) => (runtime.registries.actors.has(name) ? runtime.agentCard(name) : undefined))),
    };
    sendJson(ctx.res, 200, body);
  });

  router.add('GET', '/sessions', async (ctx) => {
    const principal = await principalOf(ctx);
    if (principal === undefined) return;
    const after = ctx.url.searchParams.get('after');
    let offset = 0;
    if (after !== null) {
      offset = Number.parseInt(Buffer.from(after, 'base64url').toString('utf8'), 10);
      if (!Number.isSafeInteger(offset) || offset < 0) throw new HttpError(400, 'request.invalid', `"after" is not a cursor this server issued`, { path: '?after' });
    }
    const filter = principal.tenantId === undefined ? {} : { tenantId: principal.tenantId };
    const records = (await runtime.listSessions(filter)).filter((r) => sameTenant(principal, r.tenantId));
    const page = records.slice(offset, offset + PAGE_SIZE);
    const sessions: SessionResponse[] = [];
    // From the stored records: listing never reactivates passivated sessions.
    for (const r of page) sessions.push(await sessionResponse(r));
    const body: { sessions: SessionResponse[]; next?: string } = { sessions };
    if (offset + PAGE_SIZE < records.length) body.next = Buffer.from(String(offset + PAGE_SIZE)).toString('base64url');
    sendJson(ctx.res, 200, body);
  });

  router.add('POST', '/sessions', async (ctx) => {
    const principal = await principalOf(ctx);
    if (principal === undefined) return;
    if (closing) throw new HttpError(503, 'server.closing', 'the server is shutting down; retry against another instance');
    const body = parseCreateSessionRequest(await readJsonBody(ctx.req, { maxBytes, required: true }));
    const agent = findAgent(body.agent.name);
    if (agent === undefined) {
      const names = agentConfigs().map((a) => a.name);
      throw new HttpError(400, 'agent.unknown', `no agent named "${body.agent.name}" (agents: ${names.join(', ')})`, { path: '/agent/name' });
    }
    if (body.messages !== undefined && body.messages.length > 0) {
      throw new HttpError(
        400,
        'request.unsupported',
        'seeding a session with messages is not supported: create the session, then send the first message with POST /sessions/{id}/turns',
        { path: '/messages' },
      );
    }
    checkServerTools(agent, body.agent.tools ?? [], '/agent/tools');
    checkOptions(agent, body.agent.options ?? {}, '/agent/options');
    checkClientTools(agent, body.tools ?? [], '/tools');
    if (body.consumes !== undefined) checkConsumes(runtime.registries.partTypes, body.consumes, '/consumes');
    const config: AapSessionConfig = { agent: { name: agent.config.name }, tools: body.tools ?? [] };
    if (body.consumes !== undefined) config.consumes = body.consumes;
    if (body.agent.tools !== undefined) config.agent.tools = body.agent.tools;
    if (body.agent.options !== undefined) config.agent.options = body.agent.options;
    const handle = await runtime.createSession({
      actor: agent.config.name,
      ...(principal.tenantId === undefined ? {} : { tenantId: principal.tenantId }),
      ...(agent.config.doubleTexting === undefined ? {} : { doubleTexting: agent.config.doubleTexting }),
      metadata: { [AAP_METADATA_KEY]: config },
    });
    // Created means durable: group commit would write the record only at the end of this
    // event-loop turn, after the 201 (a crash between them lost a session the client was given).
    handle.persistNow();
    configs.set(handle.id, config);
    sendJson(ctx.res, 201, { sessionId: handle.id });
  });

  router.add('GET', '/sessions/:id', async (ctx, params) => {
    const principal = await principalOf(ctx);
    if (principal === undefined) return;
    const handle = await sessionFor(param(params, 'id'), principal);
    sendJson(ctx.res, 200, await sessionResponse(handle));
  });

  router.add('DELETE', '/sessions/:id', async (ctx, params) => {
    const principal = await principalOf(ctx);
    if (principal === undefined) return;
    const handle = await sessionFor(param(params, 'id'), principal);
    await runtime.deleteSession(handle.id);
    configs.forget(handle.id);
    sendNoContent(ctx.res);
  });

  router.add('GET', '/sessions/:id/history', async (ctx, params) => {
    const principal = await principalOf(ctx);
    if (principal === undefined) return;
    const handle = await sessionFor(param(params, 'id'), principal);
    const type = ctx.url.searchParams.get('type');
    if (type !== 'compacted' && type !== 'full') {
      throw new HttpError(
        400,
        'request.invalid',
        type === null ? 'query parameter "type" is required: "compacted" or "full"' : `query parameter "type" must be "compacted" or "full", got "${type}"`,
        { path: '?type' },
      );
    }
    const builder = new MessageBuilder({ includeUser: true, includeClientResults: true, includeThinking: type === 'full' });
    const projector = new AapProjector({ granularity: 'whole', classify, emit: builder.push });
    for (const ev of await runtime.history(handle.id)) projector.push(ev);
    const messages = builder.finish(projector.unresolvedCalls());
    sendJson(ctx.res, 200, { history: type === 'full' ? { full: messages } : { compacted: messages } });
  });

  router.add('POST', '/sessions/:id/turns', async (ctx, params) => {
    const principal = await principalOf(ctx);
    if (principal === undefined) return;
    if (closing) throw new HttpError(503, 'server.closing', 'the server is shutting down; retry against another instance');
    const handle = await sessionFor(param(params, 'id'), principal);
    const body = parseTurnRequest(await readJsonBody(ctx.req, { maxBytes, required: true }));
    const mode = body.stream ?? 'none';
    if (!modes.includes(mode as StreamMode)) {
      throw new HttpError(400, 'stream.unsupported', `stream mode "${String(mode)}" is not supported (supported: ${modes.join(', ')})`, {
        path: '/stream',
      });
    }
    const config = await configs.get(handle);
    const agent = findAgent(config.agent.name);
    if (agent === undefined) throw new HttpError(409, 'agent.unavailable', `agent "${config.agent.name}" of session "${handle.id}" is no longer offered`);
    await runTurnRequest({
      runtime,
      handle,
      principal,
      agent,
      configs,
      config,
      body,
      mode: mode as StreamMode,
      classify,
      req: ctx.req,
      res: ctx.res,
      heartbeatMs: opts.heartbeatMs ?? 15_000,
      running,
    });
  });

  const handler = (async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const url = requestUrl(req);
    const match = router.match(req.method ?? 'GET', url.pathname);
    if (match.kind === 'none') return false;
    if (match.kind === 'method-not-allowed') {
      req.resume();
      sendJson(res, 405, { error: { code: 'method.not_allowed', message: `${req.method} is not allowed on ${url.pathname} (allowed: ${match.allow.join(', ')})` } }, {
        allow: match.allow.join(', '),
      });
      return true;
    }
    const work = (async () => {
      try {
        await match.handler({ req, res, url }, match.params);
      } catch (err) {
        if (!res.headersSent) sendError(res, mapError(err));
        else if (!res.writableEnded) res.end();
      }
    })();
    inflight.add(work);
    try {
      await work;
    } finally {
      inflight.delete(work);
    }
    return true;
  }) as AapHandler;
  handler.close = async () => {
    closing = true;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, opts.closeGraceMs ?? 10_000);
      timer.unref();
    });
    await Promise.race([Promise.allSettled([...inflight]), grace]);
    if (timer !== undefined) clearTimeout(timer);
    // Turns still running past the grace period: the server destroys the connections next, so
    // each response ends here with its turn_stop (error: the turn did not finish on this stream),
    // never a dropped socket, saying why (as an errored turn does: turn_stop's `error`, or the
    // `turnstate-error-code` header of a `none` response).
    await running.stopAll('error', {
      code: 'server.closing',
      message:
        'the server shut down before this turn finished; the turn resumes when the server is back, and the session\'s history shows how it ended',
    });
  };
  return handler;
}

function param(params: RouteParams, name: string): string {
  const v = params[name];
  if (v === undefined) throw new HttpError(400, 'request.invalid', `missing path parameter ${name}`);
  return v;
}

/** TurnstateErrors from the runtime keep their code; the busy session is a 409. */
function mapError(err: unknown): unknown {
  if (err instanceof TurnstateError && err.code === 'session.busy') {
    return new HttpError(409, 'session.busy', err.message);
  }
  return err;
}
