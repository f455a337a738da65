// The travel desk chat page: a plain client of the turnstate streams transport.
// Sessions are created with AAP (POST /sessions); everything live goes over one WebSocket
// (subprotocol turnstate.v1). Every event carries its session seq: the page applies each seq
// once and, after a dropped connection, resubscribes with resumeFrom = the last seq it applied,
// so no part is lost or shown twice.
// A2UI surfaces (a2ui-surface parts) render with @a2ui/lit from the bundle `npm run build:web`
// makes (dist/surfaces.js); a click goes back over the same WebSocket as an `action` frame.
// Nothing typed is lost: the message box keeps a message until the server says it accepted it
// (its `sent` reply, matched by ref), and stays usable while the connection is re-established.

const SESSION_KEY = 'turnstate.demo.session';
const TOKEN_KEY = 'turnstate.demo.token';
const BACKOFF_MS = [250, 500, 1000, 2000, 4000];
/** The server's default `maxFrameBytes` (docs/transports/websocket.md): a larger frame is refused. */
const MAX_FRAME_BYTES = 64 * 1024;
/** An approval answer with no reply in this time is taken as lost: its buttons work again. */
const ANSWER_TIMEOUT_MS = 10_000;
/** Upgrades refused in a row before the page says it cannot connect (it keeps trying). */
const FAILED_OPENS_NOTICE = 3;

const $ = (id) => document.getElementById(id);
const els = {
  transcript: $('transcript'),
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
  subscribed: false,
  attempt: 0,
  reconnectTimer: 0,
  /** Connections opened so far (answers remember the one they were sent on); upgrades refused in a row. */
  connection: 0,
  failedOpens: 0,
  /** Set when reconnecting cannot help (a refused key, a deleted session): the page stops trying. */
  stopped: false,
  /** The seq the current subscription's replay reaches (answers lost with a connection are released there). */
  catchUpSeq: 0,
  /** The message sent and not yet confirmed ({ ref, text }); the box keeps it until its `sent` reply. */
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

/** The line left where a surface was: closed, or replaced by a newer one with its id. */
function closedNote(replaced) {
  const p = document.createElement('p');
  p.className = 'surface-closed-note';
  p.textContent = replaced ? 'This view was replaced by a newer one below.' : 'This view was closed.';
  return p;
}

/**
 * A transcript item whose surface is gone: it takes no clicks, and an approval it carried the
 * buttons for gets its card's own buttons back (if it is still open).
 */
function markClosed(li) {
  li.classList.remove('surface');
  li.classList.add('surface-closed');
  li.inert = true;
  for (const [callId, item] of state.surfacesByCall) {
    if (item === li) state.cardsByCall.get(callId)?.classList.remove('has-surface');
  }
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

/** What a part that created no surface did to the surfaces above it. */
function surfaceChangeNote({ closed, updated }) {
  const views = (n) => (n === 1 ? 'the view above' : `${n} views above`);
  const did = [];
  if (updated.length) did.push(`Updated ${views(updated.length)}.`);
  if (closed.length) did.push(`Closed ${views(closed.length)}.`);
  const p = document.createElement('p');
  p.className = 'surface-change-note';
  p.textContent = did.length ? did.join(' ') : 'No change to the views above.';
  return p;
}

/**
 * A surface without its renderer (`reason` 'missing'), or whose messages it refused
 * ('refused'): the values of its updateDataModel messages, as data.
 */
function renderSurfaceData(messages, reason) {
  const frag = document.createDocumentFragment();
  for (const m of messages) {
    const update = m?.updateDataModel;
    if (!update || update.value === undefined) continue;
    const path = typeof update.path === 'string' ? update.path : '/';
    const name = path.split('/').filter(Boolean).at(-1);
    const value = name === undefined ? update.value : { [name]: update.value };
    if (value && typeof value === 'object' && !Array.isArray(value)) renderData(value, frag);
    else renderData({ value }, frag);
  }
  if (!frag.childNodes.length) {
    const p = document.createElement('p');
    if (messages.every((m) => m?.deleteSurface)) p.textContent = messages.length === 1 ? 'Closed a view.' : 'Closed views.';
    else if (reason === 'refused') p.textContent = 'A view this page could not show (its messages were refused).';
    else p.textContent = 'A view this page cannot show (its renderer is not loaded).';
    frag.append(p);
  }
  return frag;
}

/* ---------------------------------------------------------------- HTTP (AAP) */

async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
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
  let opened = false;
  state.ws = ws;
  state.connection++;
  ws.onopen = () => {
    opened = true;
    state.failedOpens = 0;
    send({ type: 'subscribe', sessionId: state.sessionId, resumeFrom: state.lastSeq });
  };
  ws.onmessage = (m) => {
    if (ws !== state.ws) return;
    onFrame(JSON.parse(m.data));
  };
  ws.onclose = async (e) => {
    if (ws !== state.ws) return;
    state.ws = null;
    state.subscribed = false;
    setComposer(false);
    if (state.pendingSend) {
      // The reply to the last message is lost with the connection: keep its text, and clear it
      // only if the replay shows its turn.
      state.unconfirmedText = state.pendingSend.text;
      state.pendingSend = null;
      if (e.code !== 1009) showError('The connection dropped before the server confirmed your message: it is kept in the box until its turn shows up here.');
    }
    if (e.code === 1009) {
      showError('The server closed the connection because a message was too large; it was not sent. Shorten it and send again.');
    }
    const delay = e.code === 4008 ? BACKOFF_MS[0] : BACKOFF_MS[Math.min(state.attempt, BACKOFF_MS.length - 1)];
    state.attempt++;
    setConn('reconnecting', e.code === 4008 ? 'catching up' : `retry in ${Math.round(delay / 100) / 10}s`);
    if (!opened) {
      // The upgrade was refused or the server is unreachable: ask the HTTP side why (a WebSocket
      // never shows the status of a refused upgrade). A refusal that reconnecting cannot cure stops it.
      state.failedOpens++;
      const refusal = await whyRefused();
      if (state.ws !== null || state.stopped) return;
      if (refusal) {
        stop(refusal);
        return;
      }
      if (state.failedOpens >= FAILED_OPENS_NOTICE) showError('The live connection to the server cannot be opened; still trying.', 'connection');
    }
    state.reconnectTimer = setTimeout(connect, delay + Math.random() * 100);
  };
}

/** After a refused upgrade: the HTTP status of this page's session (401/403/404), or null when it is fine or unknown. */
async function whyRefused() {
  try {
    await api('GET', `/sessions/${encodeURIComponent(state.sessionId)}`);
    return null;
  } catch (e) {
    return e.status === 401 || e.status === 403 || e.status === 404 ? e : null;
  }
}

/** Stops reconnecting and says why (a key the server refuses, a conversation that is gone). */
function stop(refusal) {
  state.stopped = true;
  clearTimeout(state.reconnectTimer);
  setConn('offline');
  if (refusal.status === 404) {
    sessionStorage.removeItem(SESSION_KEY);
    showError('This conversation no longer exists. Start a new one.');
  } else {
    showError(authMessage());
  }
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

function onFrame(f) {
  switch (f.type) {
    case 'subscribed':
      state.subscribed = true;
      state.attempt = 0;
      state.catchUpSeq = f.lastSeq ?? 0;
      setConn('live');
      setComposer(true);
      hideError('connection');
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
        if (els.input.value.trim() === state.pendingSend.text) els.input.value = '';
        state.pendingSend = null;
      }
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
      break; // pong, heartbeat
  }
}

/**
 * Once a new connection's replay has reached the seq its subscription started at, answers sent
 * on an earlier connection that got no reply are lost (had one been accepted, the replay would
 * have resolved its approval): their buttons work again.
 */
function caughtUp() {
  if (!state.subscribed || state.lastSeq < state.catchUpSeq) return;
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
  if (refusedSend) state.pendingSend = null;
  if (f.code === 'session.not_found') {
    sessionStorage.removeItem(SESSION_KEY);
    showError('This conversation no longer exists. Start a new one.');
    return;
  }
  showError(refusedSend ? `Your message was not sent: ${f.message.replace(/\.$/, '')}. It is still in the box.` : f.message);
}

/* ---------------------------------------------------------------- rendering */

function apply(ev) {
  switch (ev.type) {
    case 'turn.started':
      state.turnParts.clear();
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
      break;
    case 'approval.resolved':
      resolveApproval(ev);
      break;
    case 'actor.passed':
      addItem('note', `${ev.from} handed the conversation to ${ev.to}`);
      break;
    case 'turn.settled':
      setTurn(ev.finalizedBy);
      setStatus(ev.error ? ev.error.message : '');
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

function showUserMessage(text) {
  addItem('user', text, { label: 'You' });
  if (state.unconfirmedText && text === state.unconfirmedText) {
    // The message whose reply a dropped connection lost was accepted after all.
    if (els.input.value.trim() === state.unconfirmedText) els.input.value = '';
    state.unconfirmedText = '';
    els.error.hidden = true;
  }
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

/** Arrays of records become tables (nested objects are walked); anything else a definition list. */
function renderData(data, frag = document.createDocumentFragment()) {
  const dl = document.createElement('dl');
  for (const [name, value] of Object.entries(data)) {
    if (Array.isArray(value) && value.length > 0 && value.every((r) => r && typeof r === 'object' && !Array.isArray(r))) {
      frag.append(renderTable(name, value));
    } else if (value && typeof value === 'object' && !Array.isArray(value)) {
      renderData(value, frag);
    } else {
      const dt = document.createElement('dt');
      dt.textContent = name;
      const dd = document.createElement('dd');
      dd.textContent = formatValue(value);
      dl.append(dt, dd);
    }
  }
  if (dl.childElementCount > 0) frag.append(dl);
  return frag;
}

function renderTable(name, rows) {
  const wrap = document.createElement('div');
  wrap.className = 'table-wrap';
  const table = document.createElement('table');
  const caption = document.createElement('caption');
  caption.textContent = name;
  table.append(caption);
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))].slice(0, 8);
  const thead = table.createTHead().insertRow();
  for (const c of cols) {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = c;
    thead.append(th);
  }
  const tbody = table.createTBody();
  for (const r of rows) {
    const tr = tbody.insertRow();
    for (const c of cols) {
      const td = tr.insertCell();
      td.textContent = formatValue(r[c]);
      if (typeof r[c] === 'number') td.className = 'num';
    }
  }
  wrap.append(table);
  return wrap;
}

function formatValue(v) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') {
    return /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(v) ? v.slice(0, 16).replace('T', ' ') : v;
  }
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
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

function setCardBusy(card, busy) {
  for (const b of card.querySelectorAll('button')) b.disabled = busy;
}

function resolveApproval(ev) {
  state.resolved.add(ev.approvalId);
  clearTimeout(state.answering.get(ev.approvalId)?.timer);
  state.answering.delete(ev.approvalId);
  const card = state.approvals.get(ev.approvalId);
  if (!card) return;
  // The surface of this approval (with its own buttons) is answered too: it no longer takes clicks.
  for (const [callId, c] of state.cardsByCall) {
    if (c !== card) continue;
    const surface = state.surfacesByCall.get(callId);
    if (surface) {
      surface.inert = true;
      surface.classList.add('answered');
    }
  }
  card.querySelector('.actions')?.remove();
  const p = card.querySelector('.resolution');
  const who = ev.by?.userId ?? 'someone';
  p.textContent = `${ev.decision === 'approved' ? 'Approved' : 'Denied'} by ${who} (${ev.via})${ev.reason ? `: ${ev.reason}` : ''}`;
  p.hidden = false;
  card.dataset.decision = ev.decision;
}

/* ---------------------------------------------------------------- chrome */

function setConn(s, detail) {
  els.conn.dataset.state = s;
  els.conn.textContent = detail ? `${s} (${detail})` : s;
}

function setTurn(s) {
  els.turnState.dataset.state = s;
  els.turnState.textContent = s;
  els.transcript.setAttribute('aria-busy', String(s === 'working' || s === 'awaiting'));
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
  if (!text || state.pendingSend) return;
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
  state.pendingSend = { ref, text };
  state.unconfirmedText = '';
  els.error.hidden = true;
});

els.newSession.addEventListener('click', () => {
  sessionStorage.removeItem(SESSION_KEY);
  location.reload();
});

async function start() {
  try {
    state.sessionId = await ensureSession(false);
    document.body.dataset.sessionId = state.sessionId;
    connect();
  } catch (e) {
    setConn('offline');
    showError(e.status === 401 || e.status === 403 ? authMessage() : e.message);
  }
}

start();
