// The travel desk chat page: a plain client of the turnstate streams transport.
// Sessions are created with AAP (POST /sessions); everything live goes over one WebSocket
// (subprotocol turnstate.v1). Every event carries its session seq: the page applies each seq
// once and, after a dropped connection, resubscribes with resumeFrom = the last seq it applied,
// so no part is lost or shown twice.
// A2UI surfaces (a2ui-surface parts) render with @a2ui/lit from the bundle `npm run build:web`
// makes (dist/surfaces.js); a click goes back over the same WebSocket as an `action` frame.
// Nothing typed is lost: the message box keeps a message until the server says it accepted it
// (its `sent` reply, matched by ref), and stays usable while the connection is re-established.
// A message accepted behind a running turn (queued) shows at once, marked as waiting for it; the
// messages waiting when the page subscribes (the `subscribed` reply names them) show so too, in
// every tab and after a reload, each once. A message whose reply a dropped connection lost is
// confirmed by its turn.started, or by its text among the queued messages a new subscription
// names: the box is cleared then, so Enter cannot send it a second time.
// When the page stops (a deleted conversation, a refused key) nothing is left marked as working.
// A connection that goes silent (a network partition delivers no close) is noticed by its
// missing heartbeats, closed and re-opened.

import { closedNote, formatValue, renderData, renderSurfaceData, surfaceChangeNote } from './data-view.js';

const SESSION_KEY = 'turnstate.demo.session';
const TOKEN_KEY = 'turnstate.demo.token';
const BACKOFF_MS = [250, 500, 1000, 2000, 4000];
/** The server's default `maxFrameBytes` (docs/transports/websocket.md): a larger frame is refused. */
const MAX_FRAME_BYTES = 64 * 1024;
/** An approval answer with no reply in this time is taken as lost: its buttons work again. */
const ANSWER_TIMEOUT_MS = 10_000;
/** Upgrades refused in a row before the page says it cannot connect (it keeps trying). */
const FAILED_OPENS_NOTICE = 3;
/** A message with no `sent` or error reply in this time is taken as unconfirmed: the box keeps it. */
const SEND_TIMEOUT_MS = 10_000;
/**
 * A silent connection: the server sends a `heartbeat` frame every heartbeatMs on an idle
 * connection (15 s unless configured; no frame tells the page the setting, so it measures the
 * gaps between heartbeats). After 2.5 intervals (at least MIN_QUIET_MS) without any frame the
 * page sends a `ping`; with no frame within as long again (at most MAX_PROBE_MS) either, it
 * closes the connection and reconnects. A message or an answer sent is such a probe too. The
 * same limits bound an upgrade that never completes.
 */
const DEFAULT_HEARTBEAT_MS = 15_000;
const MIN_QUIET_MS = 1_000;
const MAX_PROBE_MS = 5_000;
const WATCH_EVERY_MS = 250;

const $ = (id) => document.getElementById(id);
const els = {
  transcript: $('transcript'),
  /** The live region around the transcript's list (role="log"): busy while a turn works. */
  log: $('transcript-log'),
  status: $('status'),
  conn: $('conn'),
  turnState: $('turn-state'),
  form: $('composer'),
  input: $('message'),
  send: $('send'),
  error: $('error'),
  newSession: $('new-session'),
  approvalTemplate: $('approval-template'),
};

const params = new URLSearchParams(location.search);
const token = params.get('token') ?? sessionStorage.getItem(TOKEN_KEY) ?? '';
if (token) sessionStorage.setItem(TOKEN_KEY, token);
if (params.has('token')) {
  // The key is kept for this tab only: take it out of the address bar (and so out of history and bookmarks).
  params.delete('token');
  const query = params.toString();
  history.replaceState(history.state, '', `${location.pathname}${query ? `?${query}` : ''}${location.hash}`);
}

const state = {
  sessionId: '',
  lastSeq: 0,
  ws: null,
  /** Whether the current connection's upgrade succeeded. */
  opened: false,
  subscribed: false,
  attempt: 0,
  reconnectTimer: 0,
  /** Connections opened so far (answers remember the one they were sent on); upgrades refused in a row. */
  connection: 0,
  failedOpens: 0,
  /** Set when reconnecting cannot help (a refused key, a deleted session): the page stops trying, and says why. */
  stopped: false,
  stopReason: '',
  /** The seq the current subscription's replay reaches (answers lost with a connection are released there). */
  catchUpSeq: 0,
  /** The message sent and not yet confirmed ({ ref, text, timer }); the box keeps it until its `sent` reply. */
  pendingSend: null,
  sendCount: 0,
  /** A message whose connection dropped before its reply: cleared from the box if its turn shows up. */
  unconfirmedText: '',
  /** Approval answers on their way: approvalId → { connection, timer }. */
  answering: new Map(),
  /** Approvals this page's answer was accepted for, and approvals resolved by anyone. */
  answeredHere: new Set(),
  resolved: new Set(),
  parts: new Map(),
  approvals: new Map(),
  /** Approval cards and surfaces by the tool call they are about (a surface may carry the buttons). */
  cardsByCall: new Map(),
  surfacesByCall: new Map(),
  /** Signatures of the parts shown for the current turn (to add envelope-only parts at settlement). */
  turnParts: new Set(),
  lastActor: 'agent',
  /** Messages accepted behind the running turn (`sent` with queued: true): turnId → their bubble. */
  queued: new Map(),
  /** Messages the `subscribed` reply named as queued, shown once the replay has caught up (after the log). */
  queuedOnSubscribe: [],
  startedTurns: new Set(),
  /** Approvals waiting for an answer: approvalId → tool (the status line says the turn waits for them). */
  waiting: new Map(),
  /** Liveness of the current connection (performance.now() times): its last frame, the unanswered probe. */
  lastFrameAt: 0,
  probeAt: 0,
  lastHeartbeatAt: 0,
  /** Gaps seen between heartbeats (the last few), and the interval taken from them (0: not known yet). */
  heartbeatGaps: [],
  heartbeatMs: 0,
};

/** Introspection for people and tests: what was rendered, in order. */
const demo = { log: [], state };
window.turnstateDemo = demo;

/* ---------------------------------------------------------------- A2UI surfaces */

/** The renderer, or null when the bundle is missing (the page then shows surfaces as data). */
const surfaces = import('./dist/surfaces.js')
  .then((m) => m.createSurfaceRenderer(onSurfaceAction, onSurfaceClosed))
  .catch((e) => {
    console.warn(`A2UI renderer not loaded (run npm run build:web): ${e.message}`);
    return null;
  });

/**
 * A click on a surface: the server decides what it means (an approval answer or a message).
 * An approve/deny answers the approval its context's approvalId names (the server's rule,
 * surfaces:action:route), so it goes the way of the card's own buttons: once per approval. One
 * without a non-empty string approvalId answers nothing and is not sent (the server would refuse
 * it, frame.invalid): it must never become a message telling the model "approve".
 */
function onSurfaceAction(action) {
  const { name, surfaceId, sourceComponentId, context, timestamp } = action;
  const frame = { type: 'action', sessionId: state.sessionId, action: { name, surfaceId, sourceComponentId, context: context ?? {} } };
  if (typeof timestamp === 'string') frame.action.timestamp = timestamp;
  if (name === 'approve' || name === 'deny') {
    const approvalId = context?.approvalId;
    if (typeof approvalId === 'string' && approvalId !== '') answerApproval(approvalId, frame);
    else showError(`This ${name} button does not say which approval it answers; nothing was sent.`);
    return;
  }
  frame.ref = `action:${surfaceId}`;
  if (!send(frame)) showError('Not connected: try again in a moment.');
}

/**
 * A rendered surface was deleted (a deleteSurface, or a createSurface of its id that replaces
 * it): it leaves the page, and its place in the transcript says so.
 */
function onSurfaceClosed(surfaceId, element, { replaced }) {
  const li = element.closest('li');
  element.replaceWith(closedNote(replaced));
  if (li && !li.querySelector('a2ui-surface')) markClosed(li);
}

/**
 * A transcript item whose surface is gone: its buttons (if any are left) are disabled, what it
 * says stays readable, and an approval it carried the buttons for gets its card's own buttons
 * back (if it is still open).
 */
function markClosed(li) {
  li.classList.remove('surface');
  li.classList.add('surface-closed');
  disableButtons(li);
  for (const [callId, item] of state.surfacesByCall) {
    if (item === li) state.cardsByCall.get(callId)?.classList.remove('has-surface');
  }
}

/**
 * Disables every button in `root` and in the open shadow roots inside it (a rendered surface's
 * buttons live in its <a2ui-surface>'s shadow root), including buttons a surface still rendering
 * adds later. Only the buttons: unlike `inert`, the content stays in the accessibility tree, so
 * an answered or closed view can still be read.
 */
function disableButtons(root) {
  const seen = new WeakSet();
  const sweep = (node) => {
    for (const b of node.querySelectorAll('button')) if (!b.disabled) b.disabled = true;
    for (const el of node.querySelectorAll('*')) {
      if (!el.shadowRoot) continue;
      sweep(el.shadowRoot);
      if (seen.has(el.shadowRoot)) continue;
      seen.add(el.shadowRoot);
      // Lit renders asynchronously, and may render a button again: disable it whenever it shows up.
      new MutationObserver(() => sweep(el.shadowRoot)).observe(el.shadowRoot, { childList: true, subtree: true, attributes: true, attributeFilter: ['disabled'] });
    }
  };
  sweep(root);
}

/**
 * Surfaces shown as data (no renderer, or messages it refused), by surface id: a later part
 * that deletes or re-creates the id closes them too.
 */
const dataSurfaces = new Map();

/** Returns the ids of the data surfaces `messages` deleted (not counting replacements). */
function closeDataSurfaces(messages) {
  const closed = [];
  for (const m of messages) {
    const id = m?.deleteSurface?.surfaceId ?? m?.createSurface?.surfaceId;
    const li = dataSurfaces.get(id);
    if (!li) continue;
    dataSurfaces.delete(id);
    const replaced = m.createSurface !== undefined;
    li.querySelector('.text')?.append(closedNote(replaced));
    if (![...dataSurfaces.values()].includes(li)) markClosed(li);
    if (!replaced) closed.push(id);
  }
  return closed;
}

/**
 * Mounts a surface part into `body` once the renderer is loaded (parts keep their order). Only
 * a rendered surface carries an approval's buttons: without the renderer (or when it refuses the
 * messages) the part shows the surface's data and the approval card keeps its own buttons. A
 * part that creates no surface (it deletes or updates earlier ones) says what it did.
 */
function renderSurface(body, part) {
  const callId = part.metadata.callId;
  const li = body.closest('li');
  if (callId) state.surfacesByCall.set(callId, li);
  const messages = part.data.messages;
  surfaces.then((renderer) => {
    const closedData = closeDataSurfaces(messages);
    let result = null;
    if (renderer) {
      try {
        result = renderer.render(messages);
      } catch (e) {
        console.warn(`surface ${part.metadata.surfaceId ?? ''} not rendered: ${e.message}`);
      }
    }
    if (result?.elements.length) {
      body.replaceChildren(...result.elements);
      li?.classList.add('surface');
      // Its approval was answered before the renderer mounted it (a replay): it takes no clicks either.
      if (li?.classList.contains('answered')) disableButtons(li);
      if (callId) state.cardsByCall.get(callId)?.classList.add('has-surface');
    } else if (result) {
      body.replaceChildren(surfaceChangeNote({ ...result, closed: [...result.closed, ...closedData] }));
      li?.classList.add('surface-change');
    } else {
      body.replaceChildren(renderSurfaceData(messages, renderer ? 'refused' : 'missing'));
      li?.classList.add('surface-data');
      for (const m of messages) {
        const id = m?.createSurface?.surfaceId;
        if (typeof id === 'string' && li) dataSurfaces.set(id, li);
      }
    }
    scrollDown();
  });
}

/* ---------------------------------------------------------------- HTTP (AAP) */

async function api(method, path, body, signal) {
  const headers = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
  const text = await res.text();
  const json = text ? JSON.parse(text) : undefined;
  if (!res.ok) {
    const err = new Error(json?.error?.message ?? `${method} ${path} failed with ${res.status}`);
    err.status = res.status;
    throw err;
  }
  return json;
}

async function ensureSession(fresh) {
  const saved = fresh ? '' : sessionStorage.getItem(SESSION_KEY);
  if (saved) {
    try {
      await api('GET', `/sessions/${encodeURIComponent(saved)}`);
      return saved;
    } catch (e) {
      if (e.status !== 404) throw e;
    }
  }
  const meta = await api('GET', '/meta');
  const agent = meta?.agents?.[0]?.name;
  if (!agent) throw new Error('the server offers no agent');
  const created = await api('POST', '/sessions', { agent: { name: agent } });
  sessionStorage.setItem(SESSION_KEY, created.sessionId);
  return created.sessionId;
}

/* ---------------------------------------------------------------- WebSocket */

function wsUrl() {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  return `${scheme}://${location.host}/ws${token ? `?token=${encodeURIComponent(token)}` : ''}`;
}

function connect() {
  clearTimeout(state.reconnectTimer);
  if (state.stopped) return;
  setConn('connecting');
  const ws = new WebSocket(wsUrl(), 'turnstate.v1');
  state.ws = ws;
  state.opened = false;
  state.connection++;
  state.lastFrameAt = performance.now();
  state.probeAt = 0;
  state.lastHeartbeatAt = 0;
  ws.onopen = () => {
    if (ws !== state.ws) return;
    state.opened = true;
    state.failedOpens = 0;
    send({ type: 'subscribe', sessionId: state.sessionId, resumeFrom: state.lastSeq });
  };
  ws.onmessage = (m) => {
    if (ws !== state.ws) return;
    state.lastFrameAt = performance.now();
    state.probeAt = 0;
    onFrame(JSON.parse(m.data));
  };
  ws.onclose = (e) => {
    if (ws !== state.ws) return;
    state.ws = null;
    lost(e.code, state.opened);
  };
}

/**
 * The connection is gone (`code`: its close code, or 0 when the page gave up on a silent one):
 * a message waiting for its reply stays in the box, and the page reconnects after a backoff.
 */
async function lost(code, opened) {
  state.subscribed = false;
  setComposer(false);
  const pending = settleSend();
  if (pending) {
    // The reply to the last message is lost with the connection: keep its text, and clear it
    // only if the replay shows its turn.
    state.unconfirmedText = pending.text;
    if (code !== 1009) showError('The connection dropped before the server confirmed your message: it is kept in the box until its turn shows up here.');
  }
  if (code === 1009) {
    showError('The server closed the connection because a message was too large; it was not sent. Shorten it and send again.');
  }
  const delay = code === 4008 ? BACKOFF_MS[0] : BACKOFF_MS[Math.min(state.attempt, BACKOFF_MS.length - 1)];
  state.attempt++;
  setConn('reconnecting', code === 4008 ? 'catching up' : code === 0 ? 'no reply from the server' : `retry in ${Math.round(delay / 100) / 10}s`);
  if (!opened) {
    state.failedOpens++;
    if (code !== 0) {
      // The upgrade was refused or the server is unreachable: ask the HTTP side why (a WebSocket
      // never shows the status of a refused upgrade). A refusal that reconnecting cannot cure stops it.
      const refusal = await whyRefused();
      if (state.ws !== null || state.stopped) return;
      if (refusal) {
        stop(refusal);
        return;
      }
    }
    if (state.failedOpens >= FAILED_OPENS_NOTICE) showError('The live connection to the server cannot be opened; still trying.', 'connection');
  }
  state.reconnectTimer = setTimeout(connect, delay + Math.random() * 100);
}

/** After a refused upgrade: the HTTP status of this page's session (401/403/404), or null when it is fine or unknown. */
async function whyRefused() {
  try {
    // Bounded: across a network partition this request would never be answered either.
    await api('GET', `/sessions/${encodeURIComponent(state.sessionId)}`, undefined, AbortSignal.timeout(MAX_PROBE_MS));
    return null;
  } catch (e) {
    return e.status === 401 || e.status === 403 || e.status === 404 ? e : null;
  }
}

/**
 * Stops reconnecting and says why (a key the server refuses, a conversation that is gone): the
 * connection is closed and Send disabled (the box keeps its text; Enter repeats the reason).
 */
function stop(refusal) {
  state.stopped = true;
  clearTimeout(state.reconnectTimer);
  const ws = state.ws;
  state.ws = null;
  state.subscribed = false;
  ws?.close(1000, 'stopped');
  settleSend();
  setConn('offline');
  setComposer(false);
  // Nothing more will arrive: no turn is shown as working, no part as streaming.
  setTurn(refusal.status === 404 ? 'ended' : 'unknown');
  for (const el of state.parts.values()) el.classList.remove('streaming');
  state.waiting.clear();
  state.queuedOnSubscribe = [];
  setStatus('');
  if (refusal.status === 404) sessionStorage.removeItem(SESSION_KEY);
  state.stopReason = refusal.status === 404 ? 'This conversation no longer exists. Start a new one.' : authMessage();
  showError(state.stopReason);
}

function authMessage() {
  return token
    ? 'The server refused this page\'s API key: open the page with ?token=<a valid key>.'
    : 'This server needs an API key: open the page with ?token=<key>.';
}

function send(frame) {
  if (state.ws?.readyState !== WebSocket.OPEN) return false;
  state.ws.send(JSON.stringify(frame));
  return true;
}

/* ---------------------------------------------------------------- liveness */

/** How long the connection may be silent before the page probes it. */
function quietLimit() {
  return Math.max(MIN_QUIET_MS, 2.5 * (state.heartbeatMs || DEFAULT_HEARTBEAT_MS));
}

/** A heartbeat arrived: the interval is the median of the last gaps between heartbeats. */
function heartbeatSeen() {
  const now = performance.now();
  if (state.lastHeartbeatAt) {
    state.heartbeatGaps = [...state.heartbeatGaps.slice(-4), now - state.lastHeartbeatAt];
    const sorted = [...state.heartbeatGaps].sort((a, b) => a - b);
    state.heartbeatMs = sorted[Math.floor(sorted.length / 2)];
  }
  state.lastHeartbeatAt = now;
}

/** Asks the server for a sign of life (any frame answers); while connecting, times the upgrade. */
function probe() {
  if (!state.ws || state.probeAt) return;
  state.probeAt = performance.now();
  send({ type: 'ping' });
}

/** Runs every WATCH_EVERY_MS: probes a quiet connection, and gives up on one that stays silent. */
function watchConnection() {
  const ws = state.ws;
  if (!ws || state.stopped) return;
  const now = performance.now();
  const quiet = quietLimit();
  if (state.probeAt) {
    if (now - state.probeAt > Math.min(quiet, MAX_PROBE_MS)) {
      // No close will come (a partition delivers none): close it here, and ignore its late close.
      state.ws = null;
      ws.close(4000, 'no reply');
      lost(0, state.opened);
    }
  } else if (now - state.lastFrameAt > quiet) {
    probe();
  }
}

/* ---------------------------------------------------------------- server frames */

function onFrame(f) {
  switch (f.type) {
    case 'subscribed':
      state.subscribed = true;
      state.attempt = 0;
      state.catchUpSeq = f.lastSeq ?? 0;
      setConn('live');
      setComposer(true);
      hideError('connection');
      onQueuedAtSubscribe(Array.isArray(f.queued) ? f.queued : []);
      caughtUp();
      break;
    case 'event':
      if (f.sessionId !== state.sessionId || f.seq <= state.lastSeq) return;
      state.lastSeq = f.seq;
      apply(f.event);
      caughtUp();
      break;
    case 'sent':
      if (state.pendingSend && f.ref === state.pendingSend.ref) {
        // Accepted: now the box may forget it (unless it was edited meanwhile).
        const { text } = settleSend();
        if (els.input.value.trim() === text) els.input.value = '';
        if (f.queued) showQueued(text, f.turnId);
      }
      break;
    case 'heartbeat':
      heartbeatSeen();
      break;
    case 'answered':
      if (typeof f.ref === 'string' && f.ref.startsWith('answer:')) {
        const id = f.ref.slice('answer:'.length);
        clearTimeout(state.answering.get(id)?.timer);
        state.answering.delete(id);
        state.answeredHere.add(id);
      }
      break;
    case 'error':
      onError(f);
      break;
    case 'unsubscribed':
      if (f.reason === 'session-ended' && f.sessionId === state.sessionId) {
        setTimeout(() => send({ type: 'subscribe', sessionId: state.sessionId, resumeFrom: state.lastSeq }), 500);
      }
      break;
    default:
      break; // pong
  }
}

/**
 * Once a new connection's replay has reached the seq its subscription started at, answers sent
 * on an earlier connection that got no reply are lost (had one been accepted, the replay would
 * have resolved its approval): their buttons work again.
 */
function caughtUp() {
  if (!state.subscribed || state.lastSeq < state.catchUpSeq) return;
  // The messages waiting behind the turn go after the log replayed so far (where they will run).
  for (const { turnId, text } of state.queuedOnSubscribe.splice(0)) showQueued(text, turnId);
  for (const [id, pending] of state.answering) {
    if (pending.connection !== state.connection) releaseAnswer(id);
  }
}

function onError(f) {
  if (typeof f.ref === 'string' && f.ref.startsWith('answer:')) {
    const id = f.ref.slice('answer:'.length);
    // A repeated answer after this page's own answer won changed nothing: that is no error.
    if (f.code === 'approval.already_resolved' && state.answeredHere.has(id)) return;
    releaseAnswer(id);
  }
  const refusedSend = state.pendingSend && (f.ref === state.pendingSend.ref || (f.ref === undefined && f.code === 'frame.too_large'));
  if (refusedSend) settleSend();
  if (f.code === 'session.not_found') {
    // Deleted (from another channel, say): reconnecting cannot bring it back.
    stop({ status: 404 });
    return;
  }
  showError(refusedSend ? `Your message was not sent: ${f.message.replace(/\.$/, '')}. It is still in the box.` : f.message);
}

/* ---------------------------------------------------------------- rendering */

function apply(ev) {
  switch (ev.type) {
    case 'turn.started':
      state.turnParts.clear();
      state.startedTurns.add(ev.turnId);
      // A message shown as queued gets its place here, where its turn begins.
      state.queued.get(ev.turnId)?.remove();
      state.queued.delete(ev.turnId);
      showUserMessage(ev.input.text);
      setTurn('working');
      setStatus('');
      break;
    case 'message.joined':
      // A message sent while the turn ran, taken into it (double-texting "interrupt"): no turn of its own.
      showUserMessage(ev.input.text);
      break;
    case 'part.delta': {
      const el = partEl(ev.callId, ev.index, ev.partType);
      el.querySelector('.text').append(ev.text);
      el.classList.add('streaming');
      break;
    }
    case 'part.received':
      renderPart(ev);
      break;
    case 'part.retracted':
      // The call's streamed text never became a part (rejected, interrupted or failed): take it back.
      for (const [key, el] of state.parts) {
        if (key.startsWith(`${ev.callId}/`)) {
          el.remove();
          state.parts.delete(key);
        }
      }
      break;
    case 'turnState.changed':
      setTurn(ev.to);
      break;
    case 'tool.called':
      setStatus(`Calling ${ev.tool}…`);
      break;
    case 'tool.result':
      setStatus(ev.isError ? `${ev.tool} failed` : '');
      break;
    case 'approval.requested':
      addApproval(ev);
      state.waiting.set(ev.approvalId, ev.tool);
      setStatus(waitingText());
      break;
    case 'approval.resolved': {
      resolveApproval(ev);
      const tool = state.waiting.get(ev.approvalId);
      state.waiting.delete(ev.approvalId);
      setStatus(waitingText() || (tool && ev.decision === 'approved' ? `Calling ${tool}…` : ''));
      break;
    }
    case 'actor.passed':
      addItem('note', `${ev.from} handed the conversation to ${ev.to}`);
      break;
    case 'turn.settled':
      setTurn(ev.finalizedBy);
      setStatus(ev.error ? ev.error.message : waitingText());
      for (const el of state.parts.values()) el.classList.remove('streaming');
      break;
    case 'envelope.settled':
      // Parts assembled at settlement (the turn's domain data, surfaces) that were not streamed as parts.
      ev.envelope.parts.forEach((part, i) => {
        if (!state.turnParts.has(signature(part))) renderPart({ callId: `${ev.turnId}/envelope`, index: i, part, actor: state.lastActor });
      });
      break;
    case 'model.usage':
      break;
    default:
      break;
  }
}

/** The status line while approvals are open: the turn waits for them (not "Calling …"). */
function waitingText() {
  const tools = [...new Set(state.waiting.values())];
  if (!tools.length) return '';
  return `Waiting for ${state.waiting.size === 1 ? 'an approval' : 'approvals'} to run ${tools.join(', ')}.`;
}

/**
 * The messages waiting behind the running turn when the subscription was made (`subscribed`
 * frame, `queued`): shown as queued once the replay catches up. One with the text of the message
 * whose reply a dropped connection lost (and not already shown here as this page's own) is that
 * message: the server accepted it, so it leaves the box, as its turn.started would take it.
 */
function onQueuedAtSubscribe(queued) {
  state.queuedOnSubscribe = [];
  for (const q of queued) {
    if (typeof q?.turnId !== 'string' || typeof q?.text !== 'string') continue;
    // The reply cuts a long text (as the server does: 2,000 UTF-16 units, whole characters, then `…`).
    if (!state.queued.has(q.turnId) && state.unconfirmedText && clippedLikeServer(state.unconfirmedText) === q.text) confirmUnconfirmed(state.unconfirmedText);
    state.queuedOnSubscribe.push({ turnId: q.turnId, text: q.text });
  }
}

/** `text` as a `subscribed` reply names a queued message: cut at 2,000 UTF-16 units, never inside a surrogate pair, `…` marking the cut. */
function clippedLikeServer(text) {
  const max = 2000;
  if (text.length <= max) return text;
  const end = (text.charCodeAt(max - 1) & 0xfc00) === 0xd800 ? max - 1 : max;
  return `${text.slice(0, end)}…`;
}

/**
 * A message the server accepted behind the running turn (`sent` with queued: true, or named by
 * `subscribed`): shown as the user's, marked as waiting, once per turnId; its turn.started (same
 * turnId) puts it in its place.
 */
function showQueued(text, turnId) {
  if (state.startedTurns.has(turnId) || state.queued.has(turnId)) return;
  const li = addItem('user', text, { label: 'You' });
  li.classList.add('queued');
  li.dataset.turnId = turnId;
  const note = document.createElement('span');
  note.className = 'queued-note';
  note.textContent = 'Queued: waits for the current turn';
  li.append(note);
  state.queued.set(turnId, li);
}

function showUserMessage(text) {
  addItem('user', text, { label: 'You' });
  confirmUnconfirmed(text);
}

/** `text` was accepted: if it is the message whose reply a dropped connection lost, the box lets it go. */
function confirmUnconfirmed(text) {
  if (!state.unconfirmedText || text !== state.unconfirmedText) return;
  if (els.input.value.trim() === state.unconfirmedText) els.input.value = '';
  state.unconfirmedText = '';
  els.error.hidden = true;
}

function addItem(kind, text, opts = {}) {
  const li = document.createElement('li');
  li.className = `item ${kind}`;
  if (opts.label) {
    const who = document.createElement('span');
    who.className = 'who';
    who.textContent = opts.label;
    li.append(who);
  }
  const body = document.createElement('div');
  body.className = 'text';
  body.textContent = text;
  li.append(body);
  els.transcript.append(li);
  scrollDown();
  return li;
}

/** The element of one part (`callId`, `index`), created on its first delta or on the whole part. */
function partEl(callId, index, partType) {
  const key = `${callId}/${index}`;
  let el = state.parts.get(key);
  if (!el) {
    el = addItem('part', '');
    el.dataset.key = key;
    state.parts.set(key, el);
    demo.log.push({ key, partType: partType ?? null, seq: state.lastSeq, at: performance.now() });
  }
  if (partType && el.dataset.partType !== partType) {
    el.dataset.partType = partType;
    el.classList.add(`part-${partType}`);
    const entry = demo.log.find((x) => x.key === key);
    if (entry && !entry.partType) entry.partType = partType;
  }
  return el;
}

function renderPart(ev) {
  const type = ev.part.metadata.partType;
  if (type === 'approval-request' || type === 'approval-response') return; // shown as approval cards
  state.turnParts.add(signature(ev.part));
  state.lastActor = ev.actor;
  const el = partEl(ev.callId, ev.index, type);
  el.classList.remove('streaming');
  el.dataset.actor = ev.actor;
  const body = el.querySelector('.text');
  body.replaceChildren();
  if (typeof ev.part.text === 'string') body.textContent = ev.part.text;
  else if (type === 'a2ui-surface' && Array.isArray(ev.part.data?.messages)) renderSurface(body, ev.part);
  else if (ev.part.data) body.append(renderData(ev.part.data));
  if (!el.querySelector('.who')) {
    const who = document.createElement('span');
    who.className = 'who';
    who.textContent = labelFor(type, ev.actor);
    el.prepend(who);
  }
  if (type === 'thinking' || type === 'progress') setStatus(ev.part.text ?? '');
  scrollDown();
}

function signature(part) {
  return `${part.metadata.partType}\u0000${part.text ?? JSON.stringify(part.data)}`;
}

function labelFor(type, actor) {
  switch (type) {
    case 'ack':
      return `${actor} · on it`;
    case 'thinking':
    case 'progress':
      return `${actor} · working`;
    case 'domain-data':
      return `${actor} · data`;
    case 'a2ui-surface':
      return `${actor} · view`;
    case 'clarify':
      return `${actor} · question`;
    case 'error':
      return `${actor} · problem`;
    default:
      return actor;
  }
}

/* ---------------------------------------------------------------- approvals */

function addApproval(ev) {
  if (state.approvals.has(ev.approvalId)) return;
  const card = els.approvalTemplate.content.firstElementChild.cloneNode(true);
  card.dataset.approvalId = ev.approvalId;
  state.cardsByCall.set(ev.callId, card);
  if (state.surfacesByCall.get(ev.callId)?.classList.contains('surface')) card.classList.add('has-surface');
  card.querySelector('.tool').textContent = `${ev.actor} wants to run ${ev.tool}`;
  const dl = card.querySelector('.args');
  for (const [k, v] of Object.entries(ev.args ?? {})) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = formatValue(v);
    dl.append(dt, dd);
  }
  const answer = (approved) => answerApproval(ev.approvalId, { type: approved ? 'approve' : 'deny', approvalId: ev.approvalId, sessionId: state.sessionId });
  card.querySelector('.approve').addEventListener('click', () => answer(true));
  card.querySelector('.deny').addEventListener('click', () => answer(false));
  state.approvals.set(ev.approvalId, card);
  if (state.answering.has(ev.approvalId)) setCardBusy(card, true);
  els.transcript.append(card);
  demo.log.push({ key: `approval/${ev.approvalId}`, partType: 'approval-request', seq: state.lastSeq, at: performance.now() });
  scrollDown();
}

/**
 * Sends one answer to an approval (`frame`: an approve/deny or a surface's action frame). Repeat
 * clicks are ignored while it is on its way and after it was accepted; an answer with no reply
 * (lost with a connection, or none within ANSWER_TIMEOUT_MS) frees the buttons again.
 */
function answerApproval(approvalId, frame) {
  if (state.answering.has(approvalId) || state.answeredHere.has(approvalId) || state.resolved.has(approvalId)) return;
  if (!send({ ...frame, ref: `answer:${approvalId}` })) {
    showError('Not connected: try again in a moment.');
    return;
  }
  probe();
  const timer = setTimeout(() => {
    if (!state.answering.has(approvalId)) return;
    releaseAnswer(approvalId);
    showError('The server did not confirm your answer: try again.');
  }, ANSWER_TIMEOUT_MS);
  state.answering.set(approvalId, { connection: state.connection, timer });
  const card = state.approvals.get(approvalId);
  if (card) setCardBusy(card, true);
}

/** The answer to `approvalId` is no longer on its way (refused or lost): the card's buttons work again. */
function releaseAnswer(approvalId) {
  clearTimeout(state.answering.get(approvalId)?.timer);
  state.answering.delete(approvalId);
  const card = state.approvals.get(approvalId);
  if (card && !state.resolved.has(approvalId)) setCardBusy(card, false);
}

/**
 * While an answer is on its way the card's buttons say they are unavailable (aria-disabled;
 * answerApproval ignores their clicks) but keep focus: `disabled` would drop a keyboard user's
 * focus to the page's <body>.
 */
function setCardBusy(card, busy) {
  for (const b of card.querySelectorAll('button')) {
    if (busy) b.setAttribute('aria-disabled', 'true');
    else b.removeAttribute('aria-disabled');
  }
}

function resolveApproval(ev) {
  state.resolved.add(ev.approvalId);
  clearTimeout(state.answering.get(ev.approvalId)?.timer);
  state.answering.delete(ev.approvalId);
  const card = state.approvals.get(ev.approvalId);
  if (!card) return;
  const surfaceItems = [];
  for (const [callId, c] of state.cardsByCall) {
    const surface = c === card ? state.surfacesByCall.get(callId) : undefined;
    if (surface) surfaceItems.push(surface);
  }
  // Whether the keyboard focus is on the buttons about to go (a shadow root's focus shows as its host).
  const active = document.activeElement;
  const hadFocus = !!active && active !== document.body && [card, ...surfaceItems].some((el) => el.contains(active));
  // The surface of this approval (with its own buttons) is answered too: its buttons no longer
  // take clicks, and what it shows stays readable.
  for (const surface of surfaceItems) {
    surface.classList.add('answered');
    disableButtons(surface);
  }
  card.querySelector('.actions')?.remove();
  const p = card.querySelector('.resolution');
  const who = ev.by?.userId ?? 'someone';
  p.textContent = `${ev.decision === 'approved' ? 'Approved' : 'Denied'} by ${who} (${ev.via})${ev.reason ? `: ${ev.reason}` : ''}`;
  p.hidden = false;
  card.dataset.decision = ev.decision;
  // Focus was on the answer just given: it goes to what became of it, not to the page's <body>.
  if (hadFocus) {
    p.tabIndex = -1;
    p.focus();
  }
}

/* ---------------------------------------------------------------- chrome */

function setConn(s, detail) {
  els.conn.dataset.state = s;
  els.conn.textContent = detail ? `${s} (${detail})` : s;
}

function setTurn(s) {
  els.turnState.dataset.state = s;
  els.turnState.textContent = s;
  els.log.setAttribute('aria-busy', String(s === 'working' || s === 'awaiting'));
}

function setStatus(text) {
  els.status.textContent = text;
}

/**
 * Only sending waits for a connection: once the page has been live the message box stays
 * enabled (and focused, when it was) while the connection is re-established.
 */
function setComposer(enabled) {
  if (enabled) els.input.disabled = false;
  if (!enabled && document.activeElement === els.send) els.input.focus();
  els.send.disabled = !enabled;
}

/** `kind` names an error a later event may take back (hideError). */
function showError(message, kind = '') {
  els.error.textContent = message;
  els.error.dataset.kind = kind;
  els.error.hidden = false;
}

function hideError(kind) {
  if (els.error.dataset.kind === kind) els.error.hidden = true;
}

function scrollDown() {
  els.transcript.lastElementChild?.scrollIntoView({ block: 'end' });
}

const utf8 = new TextEncoder();

els.form.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = els.input.value.trim();
  if (!text) return;
  if (state.pendingSend) {
    // Never ignored in silence: say what it waits for, and check the connection is alive.
    showError('Your last message is still waiting for the server\'s reply; this one stays in the box until then.');
    probe();
    return;
  }
  const ref = `send:${++state.sendCount}`;
  const frame = JSON.stringify({ type: 'send', sessionId: state.sessionId, text, ref });
  const bytes = utf8.encode(frame).byteLength;
  if (bytes > MAX_FRAME_BYTES) {
    showError(`This message is too long to send: ${bytes.toLocaleString('en')} bytes, over the server's limit of ${MAX_FRAME_BYTES.toLocaleString('en')} bytes (64 KiB) a message. Shorten it and send again.`);
    return;
  }
  if (state.ws?.readyState !== WebSocket.OPEN || !state.subscribed) {
    showError('Not connected: your message was not sent. Try again in a moment.');
    return;
  }
  state.ws.send(frame);
  state.pendingSend = { ref, text, timer: setTimeout(() => sendTimedOut(ref), SEND_TIMEOUT_MS) };
  state.unconfirmedText = '';
  els.error.hidden = true;
  probe();
});

/** Enter with Send disabled (no live connection) submits nothing: say so rather than nothing. */
els.input.addEventListener('keydown', (e) => {
  if (e.key !== 'Enter' || e.isComposing || !els.send.disabled) return;
  if (state.stopped) showError(state.stopReason);
  else showError('Not connected yet: your message stays in the box. Press Enter again once the connection is live.', 'connection');
});

/** The message on its way is no longer awaited (answered, refused, timed out or lost): returns it. */
function settleSend() {
  const pending = state.pendingSend;
  if (pending) clearTimeout(pending.timer);
  state.pendingSend = null;
  return pending;
}

function sendTimedOut(ref) {
  if (state.pendingSend?.ref !== ref) return;
  const { text } = settleSend();
  // Kept in the box; should it have been accepted after all, its turn clears it (showUserMessage).
  state.unconfirmedText = text;
  showError('The server did not confirm your message: it is still in the box. Send it again.');
}

els.newSession.addEventListener('click', () => {
  sessionStorage.removeItem(SESSION_KEY);
  location.reload();
});

async function start() {
  try {
    state.sessionId = await ensureSession(false);
    document.body.dataset.sessionId = state.sessionId;
    connect();
    setInterval(watchConnection, WATCH_EVERY_MS);
  } catch (e) {
    setConn('offline');
    showError(e.status === 401 || e.status === 403 ? authMessage() : e.message);
  }
}

start();
