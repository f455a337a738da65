// The travel desk chat page: a plain client of the turnstate streams transport.
// Sessions are created with AAP (POST /sessions); everything live goes over one WebSocket
// (subprotocol turnstate.v1). Every event carries its session seq: the page applies each seq
// once and, after a dropped connection, resubscribes with resumeFrom = the last seq it applied,
// so no part is lost or shown twice.
// A2UI surfaces (a2ui-surface parts) render with @a2ui/lit from the bundle `npm run build:web`
// makes (dist/surfaces.js); a click goes back over the same WebSocket as an `action` frame.

const SESSION_KEY = 'turnstate.demo.session';
const TOKEN_KEY = 'turnstate.demo.token';
const BACKOFF_MS = [250, 500, 1000, 2000, 4000];

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

const state = {
  sessionId: '',
  lastSeq: 0,
  ws: null,
  subscribed: false,
  attempt: 0,
  reconnectTimer: 0,
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
  .then((m) => m.createSurfaceRenderer(onSurfaceAction))
  .catch((e) => {
    console.warn(`A2UI renderer not loaded (run npm run build:web): ${e.message}`);
    return null;
  });

/** A click on a surface: the server decides what it means (an approval answer or a message). */
function onSurfaceAction(action) {
  const { name, surfaceId, sourceComponentId, context, timestamp } = action;
  const frame = { type: 'action', sessionId: state.sessionId, action: { name, surfaceId, sourceComponentId, context: context ?? {} }, ref: `action:${surfaceId}` };
  if (typeof timestamp === 'string') frame.action.timestamp = timestamp;
  if (!send(frame)) showError('Not connected: try again in a moment.');
}

/** Mounts a surface part into `body` once the renderer is loaded (parts keep their order). */
function renderSurface(body, part) {
  const callId = part.metadata.callId;
  if (callId) {
    state.surfacesByCall.set(callId, body.closest('li'));
    state.cardsByCall.get(callId)?.classList.add('has-surface');
  }
  surfaces.then((renderer) => {
    let elements = null;
    if (renderer) {
      try {
        elements = renderer.render(part.data.messages);
      } catch (e) {
        console.warn(`surface ${part.metadata.surfaceId ?? ''} not rendered: ${e.message}`);
      }
    }
    body.replaceChildren(...(elements && elements.length ? elements : [renderData(part.data)]));
    if (elements && elements.length) body.closest('li')?.classList.add('surface');
    scrollDown();
  });
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
  setConn('connecting');
  const ws = new WebSocket(wsUrl(), 'turnstate.v1');
  state.ws = ws;
  ws.onopen = () => {
    send({ type: 'subscribe', sessionId: state.sessionId, resumeFrom: state.lastSeq });
  };
  ws.onmessage = (m) => {
    if (ws !== state.ws) return;
    onFrame(JSON.parse(m.data));
  };
  ws.onclose = (e) => {
    if (ws !== state.ws) return;
    state.ws = null;
    state.subscribed = false;
    setComposer(false);
    const delay = e.code === 4008 ? BACKOFF_MS[0] : BACKOFF_MS[Math.min(state.attempt, BACKOFF_MS.length - 1)];
    state.attempt++;
    setConn('reconnecting', e.code === 4008 ? 'catching up' : `retry in ${Math.round(delay / 100) / 10}s`);
    state.reconnectTimer = setTimeout(connect, delay + Math.random() * 100);
  };
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
      setConn('live');
      setComposer(true);
      break;
    case 'event':
      if (f.sessionId !== state.sessionId || f.seq <= state.lastSeq) return;
      state.lastSeq = f.seq;
      apply(f.event);
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
      break; // sent, answered, pong, heartbeat
  }
}

function onError(f) {
  if (typeof f.ref === 'string' && f.ref.startsWith('answer:')) {
    const card = state.approvals.get(f.ref.slice('answer:'.length));
    if (card) setCardBusy(card, false);
  }
  if (f.code === 'session.not_found') {
    sessionStorage.removeItem(SESSION_KEY);
    showError('This conversation no longer exists. Start a new one.');
    return;
  }
  showError(f.message);
}

/* ---------------------------------------------------------------- rendering */

function apply(ev) {
  switch (ev.type) {
    case 'turn.started':
      state.turnParts.clear();
      addItem('user', ev.input.text, { label: 'You' });
      setTurn('working');
      setStatus('');
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
  if (state.surfacesByCall.has(ev.callId)) card.classList.add('has-surface');
  card.querySelector('.tool').textContent = `${ev.actor} wants to run ${ev.tool}`;
  const dl = card.querySelector('.args');
  for (const [k, v] of Object.entries(ev.args ?? {})) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = formatValue(v);
    dl.append(dt, dd);
  }
  const answer = (approved) => {
    setCardBusy(card, true);
    const ok = send({ type: approved ? 'approve' : 'deny', approvalId: ev.approvalId, sessionId: state.sessionId, ref: `answer:${ev.approvalId}` });
    if (!ok) {
      setCardBusy(card, false);
      showError('Not connected: try again in a moment.');
    }
  };
  card.querySelector('.approve').addEventListener('click', () => answer(true));
  card.querySelector('.deny').addEventListener('click', () => answer(false));
  state.approvals.set(ev.approvalId, card);
  els.transcript.append(card);
  demo.log.push({ key: `approval/${ev.approvalId}`, partType: 'approval-request', seq: state.lastSeq, at: performance.now() });
  scrollDown();
}

function setCardBusy(card, busy) {
  for (const b of card.querySelectorAll('button')) b.disabled = busy;
}

function resolveApproval(ev) {
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

function setComposer(enabled) {
  els.input.disabled = !enabled;
  els.send.disabled = !enabled;
}

function showError(message) {
  els.error.textContent = message;
  els.error.hidden = false;
}

function scrollDown() {
  els.transcript.lastElementChild?.scrollIntoView({ block: 'end' });
}

els.form.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = els.input.value.trim();
  if (!text) return;
  if (send({ type: 'send', sessionId: state.sessionId, text })) {
    els.input.value = '';
    els.error.hidden = true;
  } else {
    showError('Not connected: your message was not sent.');
  }
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
    showError(e.status === 401 || e.status === 403 ? 'This server needs an API key: open the page with ?token=<key>.' : e.message);
  }
}

start();
