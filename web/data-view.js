// What the demo page shows of data (web/app.js imports it; plain DOM, no page state): records
// as definition lists, arrays of records as tables, the data of an A2UI surface the renderer
// cannot show, and the notes left where surfaces closed. Values are always set as text.

/** The line left where a surface was: closed, or replaced by a newer one with its id. */
export function closedNote(replaced) {
  const p = document.createElement('p');
  p.className = 'surface-closed-note';
  p.textContent = replaced ? 'This view was replaced by a newer one below.' : 'This view was closed.';
  return p;
}

/** What a part that created no surface did to the surfaces above it. */
export function surfaceChangeNote({ closed, updated }) {
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
export function renderSurfaceData(messages, reason) {
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

/** Arrays of records become tables (nested objects are walked); anything else a definition list. */
export function renderData(data, frag = document.createDocumentFragment()) {
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

export function formatValue(v) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') {
    return /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(v) ? v.slice(0, 16).replace('T', ' ') : v;
  }
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}
