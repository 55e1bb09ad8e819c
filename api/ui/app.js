// orkwal's web page: plain JavaScript, no build step, nothing fetched from
// another host. Every page is drawn from the JSON API and kept live by
// GET /events (docs/api.md). Status is always written as text with an icon,
// never shown by colour alone.
'use strict';

const ICON = { success: '✓', failed: '✗', running: '▶', dispatched: '↗', pending: '○', skipped: '↷',
  cancelled: '⊘', cancelling: '⊘', interrupted: '⚠', paused: '⏸' };
const RUN_STATUSES = ['pending', 'running', 'success', 'failed', 'cancelled'];
// The SVG namespace, read from the parser rather than written here: the
// page's files name no host at all.
const SVGNS = (() => { const d = document.createElement('div'); d.innerHTML = '<svg></svg>'; return d.firstChild.namespaceURI; })();

// ---- DOM helpers

function build(el, attrs, kids) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else if (k === 'style') Object.assign(el.style, v); // CSSOM: the CSP forbids style attributes
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid == null || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}
const h = (tag, attrs, ...kids) => build(document.createElement(tag), attrs, kids);
const svg = (tag, attrs, ...kids) => build(document.createElementNS(SVGNS, tag), attrs, kids);
const $ = (sel, el = document) => el.querySelector(sel);

// redraw replaces el's children, keeping the keyboard's place: when the
// focused element was among them, the element that stands for the same
// thing afterwards (same id, or the same place in the row or node of the
// same task, attempt, run or workflow) gets the focus, without scrolling.
// Nothing focused, or the thing gone, leaves the focus alone.
function redraw(el, ...kids) {
  const mark = focusMark(document.activeElement);
  el.replaceChildren(...kids);
  if (!mark || (document.activeElement && document.activeElement !== document.body)) return;
  let to = document.querySelector(mark.sel);
  if (to && mark.inner) to = to.querySelectorAll(mark.inner)[mark.i];
  if (to) to.focus({ preventScroll: true });
}

const KEYS = ['data-task', 'data-attempt', 'data-run', 'data-workflow', 'data-version'];

// focusMark names the focused element by what it stands for: its id, else
// the keyed row or node holding it (within the nearest element with an
// id) and its place there among the elements of its kind; null if none.
function focusMark(el) {
  if (!el || el === document.body || !$('#main').contains(el)) return null;
  if (el.id) return { sel: '#' + CSS.escape(el.id) };
  const row = el.closest(KEYS.map((k) => `[${k}]`).join(','));
  if (!row) return null;
  const key = KEYS.find((k) => row.hasAttribute(k)), scope = row.parentElement.closest('[id]');
  const sel = (scope ? '#' + CSS.escape(scope.id) + ' ' : '') + `${row.localName}[${key}="${CSS.escape(row.getAttribute(key))}"]`;
  return row === el ? { sel } : { sel, inner: el.localName, i: [...row.querySelectorAll(el.localName)].indexOf(el) };
}

function badge(status) {
  return h('span', { class: 'badge s-' + status, 'data-status': status }, (ICON[status] || '•') + ' ' + status);
}

// ---- time

function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
function fmtDur(ms) {
  if (ms == null || isNaN(ms)) return '';
  if (ms < 1000) return Math.max(0, Math.round(ms)) + ' ms';
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}
function span(a, b) { return a ? ((b ? new Date(b) : new Date()) - new Date(a)) : null; }
function ago(iso) {
  if (!iso) return '';
  const ms = Date.now() - new Date(iso);
  return ms < 0 ? 'in ' + fmtDur(-ms) : fmtDur(ms) + ' ago';
}
function when(iso) { return iso ? h('time', { datetime: iso, title: fmtTime(iso) }, ago(iso)) : ''; }

// ---- the API

class AuthError extends Error {}

async function api(path, opts = {}) {
  const headers = { Accept: 'application/json' };
  if (opts.body) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { credentials: 'same-origin', headers, ...opts });
  if (r.status === 401) { showLogin(); throw new AuthError('unauthorized'); }
  const text = await r.text();
  let body = text;
  try { body = JSON.parse(text); } catch (e) { /* not JSON */ }
  if (!r.ok) {
    const err = new Error((body && body.error) || `${r.status} ${r.statusText}`);
    err.status = r.status;
    throw err;
  }
  return { body, headers: r.headers };
}

function showLogin(message) {
  if ($('#login')) return;
  const input = h('input', { type: 'password', id: 'token', autocomplete: 'current-password', required: true });
  const msg = h('p', { class: 'err', id: 'login-msg', role: 'alert' }, message || '');
  const form = h('form', { class: 'login', id: 'login' },
    h('h1', {}, 'Sign in'),
    h('p', {}, 'This daemon needs its token (the one given with --token or ORKWAL_TOKEN). It is sent once; the page then keeps a session cookie.'),
    h('label', { for: 'token' }, 'Token'), input, msg,
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    msg.textContent = '';
    const r = await fetch('/ui/login', { method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: input.value }) });
    if (r.ok) { location.reload(); return; }
    let text = r.statusText;
    try { text = (await r.json()).error; } catch (err) { /* keep the status */ }
    msg.textContent = text;
  });
  $('#main').replaceChildren(form);
  input.focus();
}

// ---- live updates

// drawn marks when the page first shows its data (performance mark
// orkwal-drawn: the benchmark's "usable").
function drawn() {
  if (!performance.getEntriesByName('orkwal-drawn').length) performance.mark('orkwal-drawn');
}

// live follows /events with query, calling onEvent for each event and
// onReset when the page must reload everything (a reset event, or a
// stream the browser gave up on and that is opened anew); reloadOnOpen:
// the page's data came with it, and what changed since is read once the
// stream is open.
function live(query, onEvent, onReset, reloadOnOpen) {
  const el = $('#live');
  const seen = window.orkwalEvents = []; // the ids received, latest 10,000 at most (tests, debugging)
  let es = null;
  // waiting: the page waits on the stream's first opening for its reload;
  // a stream that fails first reloads it at once (and again when it opens).
  let waiting = !!reloadOnOpen;
  const set = (on, text) => { el.textContent = text; el.className = 'live ' + (on ? 'on' : 'off'); };
  const open = (again) => {
    es = new EventSource('/events' + query);
    es.onopen = () => { set(true, 'live'); waiting = false; if (again) { again = false; onReset(); } };
    es.onmessage = (m) => {
      let ev;
      try { ev = JSON.parse(m.data); } catch (e) { return; }
      if (ev.id) seen.push(ev.id); // counts after a run event have none
      if (seen.length > 10000) seen.splice(0, 5000);
      onEvent(ev);
    };
    es.addEventListener('reset', () => onReset());
    es.onerror = () => {
      set(false, 'reconnecting…');
      if (waiting) { waiting = false; onReset(); }
      if (es.readyState === EventSource.CLOSED) setTimeout(() => open(true), 2000);
    };
  };
  // Closed when the page is left: a page kept in the back/forward cache
  // would hold its stream, and a browser has six connections per host.
  window.addEventListener('pagehide', () => { if (es) es.close(); es = null; });
  window.addEventListener('pageshow', (e) => { if (e.persisted) open(true); });
  // Opened after the page's load event: a page read once (a crawler, a
  // headless --dump-dom) is complete without waiting for the stream.
  if (document.readyState === 'complete') open(!!reloadOnOpen);
  else window.addEventListener('load', () => open(!!reloadOnOpen), { once: true });
}

// debounce calls fn at most once per ms (trailing); delay may be a function.
function debounce(fn, delay) {
  let timer = null;
  return (...args) => {
    if (timer) return;
    timer = setTimeout(() => { timer = null; fn(...args); }, typeof delay === 'function' ? delay() : delay);
  };
}

function setQuery(params, push) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const url = location.pathname + (q.toString() ? '?' + q : '');
  if (push) history.pushState(null, '', url); else history.replaceState(null, '', url);
}

function flash(el, text, ok) {
  el.replaceChildren(h('span', { class: ok ? 'ok' : 'err', role: 'alert' }, text));
}

// ---- graphs

// layout places a DAG's nodes in columns by depth (longest path from a
// root), ordering each column by the mean row of its parents.
function layout(nodes) {
  const byKey = new Map(nodes.map((n) => [n.key, n]));
  const depth = new Map();
  const depthOf = (n, seen) => {
    if (depth.has(n.key)) return depth.get(n.key);
    if (seen.has(n.key)) return 0; // a cycle: the parser refuses them anyway
    seen.add(n.key);
    let d = 0;
    for (const dep of n.deps) if (byKey.has(dep)) d = Math.max(d, depthOf(byKey.get(dep), seen) + 1);
    depth.set(n.key, d);
    return d;
  };
  nodes.forEach((n) => depthOf(n, new Set()));
  const cols = [];
  nodes.forEach((n) => (cols[depth.get(n.key)] ||= []).push(n));
  const row = new Map();
  cols.forEach((col, c) => {
    if (c > 0) {
      const mean = (n) => { const rs = n.deps.filter((d) => row.has(d)).map((d) => row.get(d)); return rs.length ? rs.reduce((a, b) => a + b, 0) / rs.length : 0; };
      col.sort((a, b) => mean(a) - mean(b));
    }
    col.forEach((n, i) => row.set(n.key, i));
  });
  return { depth, row, cols: cols.length, rows: Math.max(1, ...cols.map((c) => c.length)) };
}

const NW = 172, NH = 62, GX = 40, GY = 16, PAD = 10;

// drawDAG draws nodes ({key, deps, status, lines, cls}) as an SVG; onPick
// is called with a node's key when it is clicked or chosen by keyboard.
function drawDAG(nodes, selected, onPick) {
  const L = layout(nodes);
  const at = (k) => ({ x: PAD + L.depth.get(k) * (NW + GX), y: PAD + L.row.get(k) * (NH + GY) });
  const width = PAD * 2 + L.cols * NW + (L.cols - 1) * GX, height = PAD * 2 + L.rows * NH + (L.rows - 1) * GY;
  const edges = [], boxes = [];
  for (const n of nodes) {
    const b = at(n.key);
    for (const d of n.deps) {
      if (!L.depth.has(d)) continue;
      const a = at(d);
      const x1 = a.x + NW, y1 = a.y + NH / 2, x2 = b.x, y2 = b.y + NH / 2, mx = (x1 + x2) / 2;
      edges.push(svg('path', { class: 'edge', d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`, 'marker-end': 'url(#arrow)' }));
    }
    const g = svg('g', { class: `node s-${n.status}${n.key === selected ? ' sel' : ''}`, transform: `translate(${b.x},${b.y})`,
      tabindex: 0, role: 'button', 'data-task': n.key, 'data-status': n.status,
      'aria-label': `${n.key}: ${n.status}`, onclick: () => onPick(n.key),
      onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); onPick(n.key); } } },
    svg('title', {}, `${n.key}: ${n.status}`),
    svg('rect', { width: NW, height: NH, rx: 6 }),
    svg('text', { x: 10, y: 18, class: 'name' }, clip(n.key, 22)),
    n.lines.map((t, i) => svg('text', { x: 10, y: 36 + i * 16, class: i === 0 ? 'status' : 'meta' }, clip(t, 26))));
    boxes.push(g);
  }
  return svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'group', 'aria-label': 'task graph' },
    svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' },
      svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: 'currentColor' }))),
    edges, boxes);
}

function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + '…' : s; }

// ---- pages

function route() {
  const p = location.pathname;
  let m;
  if (p === '/ui/' || p === '/ui') return pageWorkflows();
  if (p === '/ui/runs') return pageRuns();
  if ((m = p.match(/^\/ui\/runs\/([0-9a-f-]{36})$/))) return pageRun(m[1]);
  if ((m = p.match(/^\/ui\/workflows\/([^/]+)$/))) return pageWorkflow(decodeURIComponent(m[1]));
  $('#main').replaceChildren(h('p', { class: 'err' }, 'No such page: ' + p));
}

function catching(fn) {
  return async (...args) => {
    try { await fn(...args); } catch (e) {
      if (e instanceof AuthError) return;
      const main = $('#main');
      let box = $('#page-error');
      if (!box) { box = h('p', { id: 'page-error', class: 'err', role: 'alert' }); main.prepend(box); }
      box.textContent = e.message;
    }
  };
}

// -- workflows

const pageWorkflows = catching(async () => {
  const q = new URLSearchParams(location.search);
  const search = h('input', { type: 'search', id: 'search', placeholder: 'name or description', value: q.get('q') || '', 'aria-label': 'Search workflows' });
  const tbody = h('tbody');
  const msg = h('div', { id: 'msg' });
  const folder = h('div', { id: 'folder' });
  $('#main').replaceChildren(h('h1', {}, 'Workflows'), folder, msg,
    h('form', { class: 'filters', onsubmit: (e) => e.preventDefault() }, h('label', {}, 'Search', search)),
    h('table', { id: 'workflows' }, h('thead', {}, h('tr', {}, ['Workflow', 'Version', 'Schedule', 'Last run', 'Runs by status', ''].map((t) => h('th', {}, t)))), tbody));
  let wfs = [], sum = {};
  const draw = () => {
    const needle = search.value.trim().toLowerCase();
    const rows = wfs.filter((w) => !needle || w.name.toLowerCase().includes(needle) || (w.description || '').toLowerCase().includes(needle))
      .map((w) => workflowRow(w, sum[w.name], load, msg));
    redraw(tbody, ...(rows.length ? rows : [h('tr', {}, h('td', { colspan: 6, class: 'muted' }, wfs.length ? 'No workflow matches.' : 'No workflows yet: start the daemon with --workflows DIR, or orkwal apply FILE.'))]));
  };
  const load = catching(async () => {
    const [a, b, hz] = await Promise.all([api('/workflows'), api('/summary'), api('/healthz').catch(() => null)]);
    wfs = a.body; sum = b.body.workflows || {};
    folderProblems(folder, hz && hz.body.workflows_folder);
    draw();
    drawn();
  });
  search.addEventListener('input', () => { setQuery({ q: search.value }); draw(); });
  await load();
  live('?tasks=0', debounce(load, 500), load);
});

// folderProblems says, loudly, that the --workflows folder's last load
// recorded nothing (a bad file keeps the whole folder out), and why.
function folderProblems(el, f) {
  if (!f || f.ok) { el.replaceChildren(); return; }
  const problems = f.problems || [];
  el.replaceChildren(h('div', { class: 'err', id: 'folder-problems', role: 'alert' },
    h('strong', {}, 'The workflows folder ', h('code', {}, f.dir || ''), ' was not loaded'),
    ': the workflows keep the versions they had until its files are fixed.',
    h('ul', {}, problems.map((p) => h('li', {}, h('code', {}, p))))));
}

function workflowRow(w, s, reload, msg) {
  const sched = w.schedule;
  const counts = s ? RUN_STATUSES.filter((st) => s.counts[st]).map((st) => h('a', { href: `/ui/runs?workflow=${encodeURIComponent(w.name)}&status=${st}` }, badge(st), h('span', { class: 'count' }, s.counts[st], ' '))) : h('span', { class: 'muted' }, 'no runs');
  return h('tr', { 'data-workflow': w.name },
    h('td', {}, h('a', { href: '/ui/workflows/' + encodeURIComponent(w.name) }, w.name), w.description ? h('div', { class: 'muted' }, w.description) : '',
      w.managed_by ? h('div', { class: 'muted managed' }, 'managed by ', h('code', {}, w.managed_by)) : ''),
    h('td', {}, 'v' + w.version),
    h('td', {}, sched ? [h('code', {}, sched.cron), ' ', sched.paused ? badge('paused') : h('div', { class: 'muted' }, 'next ', when(sched.next_fire)),
      ' ', pauseButton(w, reload, msg)] : h('span', { class: 'muted' }, 'none')),
    h('td', {}, s && s.last ? [badge(s.last.status), ' ', h('a', { href: '/ui/runs/' + s.last.id }, when(s.last.created_at))] : ''),
    h('td', { class: 'counts' }, counts),
    h('td', {}, h('button', { class: 'primary', onclick: () => triggerDialog(w) }, 'Trigger…')));
}

function pauseButton(w, reload, msg) {
  const paused = w.schedule.paused;
  return h('button', { class: 'pause', onclick: async (e) => {
    e.target.disabled = true;
    try {
      await api(`/workflows/${encodeURIComponent(w.name)}/schedule/${paused ? 'resume' : 'pause'}`, { method: 'POST' });
      flash(msg, `${w.name}: schedule ${paused ? 'resumed' : 'paused'}`, true);
    } catch (err) { flash(msg, err.message); }
    reload();
  } }, paused ? 'Resume' : 'Pause');
}

// triggerDialog opens a form built from the workflow's params, defaults
// filled in; the API's errors are shown next to the field they name.
function triggerDialog(w) {
  const names = Object.keys(w.params || {}).sort();
  const fields = new Map(names.map((k) => [k, {
    input: h('input', { name: k, id: 'param-' + k, value: w.params[k], 'aria-describedby': 'err-' + k }),
    err: h('div', { class: 'field-err', id: 'err-' + k, role: 'alert' }) }]));
  const top = h('div', { class: 'field-err', id: 'trigger-error', role: 'alert' });
  const dlg = h('dialog', { id: 'trigger-dialog' });
  const form = h('form', {},
    h('h2', {}, 'Trigger ', w.name),
    names.length ? names.map((k) => [h('label', { for: 'param-' + k }, k), fields.get(k).input, fields.get(k).err])
      : h('p', { class: 'muted' }, 'This workflow declares no params.'),
    top,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', id: 'trigger-submit' }, 'Trigger run'),
      h('button', { type: 'button', onclick: () => dlg.close() }, 'Cancel')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    top.textContent = '';
    fields.forEach((f) => { f.err.textContent = ''; });
    const params = {};
    let bad = false;
    fields.forEach((f, k) => {
      const v = f.input.value;
      if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(v)) { f.err.textContent = 'control characters are not allowed'; bad = true; }
      else if (v.length > 16384) { f.err.textContent = 'too long (at most 16384 characters)'; bad = true; }
      params[k] = v;
    });
    if (bad) return;
    try {
      const r = await api(`/workflows/${encodeURIComponent(w.name)}/runs`, { method: 'POST', body: JSON.stringify({ params }) });
      location.href = '/ui/runs/' + r.body.id;
    } catch (err) {
      if (err instanceof AuthError) return;
      const m = /params\.([A-Za-z0-9_.-]+?)[:\s]/.exec(err.message + ' ');
      const f = m && fields.get(m[1]);
      (f ? f.err : top).textContent = err.message;
    }
  });
  dlg.append(form);
  dlg.addEventListener('close', () => dlg.remove());
  document.body.append(dlg);
  dlg.showModal();
}

// -- runs

const pageRuns = catching(async () => {
  const q = new URLSearchParams(location.search);
  const wfSel = h('select', { name: 'workflow', id: 'f-workflow' }, h('option', { value: '' }, 'any'));
  const stSel = h('select', { name: 'status', id: 'f-status' }, h('option', { value: '' }, 'any'),
    RUN_STATUSES.map((s) => h('option', { value: s, selected: q.get('status') === s }, (ICON[s] || '') + ' ' + s)));
  const since = h('input', { type: 'datetime-local', name: 'since', id: 'f-since' });
  if (q.get('since')) since.value = localInput(q.get('since'));
  const tbody = h('tbody');
  const pager = h('div', { class: 'pager' });
  const form = h('form', { class: 'filters' }, h('label', {}, 'Workflow', wfSel), h('label', {}, 'Status', stSel),
    h('label', {}, 'Since', since), h('button', { type: 'submit' }, 'Filter'));
  $('#main').replaceChildren(h('h1', {}, 'Runs'), form,
    h('table', { id: 'runs' }, h('thead', {}, h('tr', {}, ['Status', 'Run', 'Workflow', 'Trigger', 'Created', 'Duration'].map((t) => h('th', {}, t)))), tbody), pager);
  api('/workflows').then((r) => {
    for (const w of r.body) wfSel.append(h('option', { value: w.name, selected: q.get('workflow') === w.name }, w.name));
    if (q.get('workflow') && !r.body.some((w) => w.name === q.get('workflow'))) wfSel.append(h('option', { value: q.get('workflow'), selected: true }, q.get('workflow')));
  }).catch(() => {});
  const current = () => Object.fromEntries(new URLSearchParams(location.search));
  const load = catching(async () => {
    const cur = current();
    const p = new URLSearchParams({ limit: '50' });
    for (const k of ['workflow', 'status', 'since', 'cursor']) if (cur[k]) p.set(k, cur[k]);
    const r = await api('/runs?' + p);
    redraw(tbody, ...(r.body.length ? r.body.map(runRow) : [h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No runs match.'))]));
    const next = r.headers.get('X-Next-Cursor');
    redraw(pager,
      cur.cursor ? h('a', { href: '#', id: 'newest', onclick: (e) => { e.preventDefault(); setQuery({ ...cur, cursor: '' }, true); load(); } }, '« Newest') : '',
      next ? h('a', { href: '#', id: 'older', onclick: (e) => { e.preventDefault(); setQuery({ ...cur, cursor: next }, true); load(); } }, 'Older »') : '');
    drawn();
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    setQuery({ workflow: wfSel.value, status: stSel.value, since: since.value ? new Date(since.value).toISOString() : '' }, true);
    load();
  });
  window.addEventListener('popstate', load);
  await load();
  const refresh = debounce(load, 500);
  live('?tasks=0' + (q.get('workflow') ? '&workflow=' + encodeURIComponent(q.get('workflow')) : ''), (ev) => { if (ev.run) refresh(); }, load);
});

function localInput(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return '';
  return new Date(d - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

// shortID is how the page names a run in a line: a prefix of its id, as
// the CLI takes it. A run id is a UUIDv7, whose first 8 digits are its time
// to about a minute (the same for all runs of that minute); through its
// 13th it is its time to the millisecond, which tells runs apart.
function shortID(id) { return id.slice(0, 13); }

function runRow(r) {
  return h('tr', { 'data-run': r.id },
    h('td', {}, badge(runStatus(r))),
    h('td', {}, h('a', { href: '/ui/runs/' + r.id, class: 'mono' }, shortID(r.id))),
    h('td', {}, h('a', { href: '/ui/workflows/' + encodeURIComponent(r.workflow) }, r.workflow), ' ',
      h('a', { class: 'muted', href: `/ui/workflows/${encodeURIComponent(r.workflow)}?version=${r.version}` }, 'v' + r.version)),
    h('td', {}, r.trigger || ''),
    h('td', {}, when(r.created_at)),
    h('td', {}, fmtDur(span(r.started_at, r.finished_at))));
}

// -- one run

const PAGE = 100; // instances of a fan-out listed at once

// The run page reads the run with its fan-outs summarised
// (?instances=counts: a fan-out is one task counting its instances), and a
// fan-out's instances a page at a time: what it fetches never grows with a
// fan-out's size.
const pageRun = catching(async (id) => {
  const q = new URLSearchParams(location.search);
  // counts: each fan-out's instances by status, from the stream's
  // instance_counts events since the run was last fetched (seq orders them).
  // inst: the page of the open fan-out's instances; one: the selected
  // instance when that page does not hold it.
  const st = { run: null, sel: q.get('task') || '', fanout: '', page: 0, inst: null, one: null, wf: null, wfGone: false, log: null, counts: {}, seq: 0 };
  const head = h('div'), facts = h('div'), dag = h('div', { class: 'dag', id: 'dag' }), gantt = h('div', { class: 'gantt', id: 'gantt' });
  const inst = h('div', { id: 'instances' }), panel = h('div', { id: 'task-panel' }), msg = h('div', { id: 'msg' });
  $('#main').replaceChildren(head, msg, h('div', { class: 'grid' },
    h('div', {}, h('h2', {}, 'Graph'), dag, inst, h('h2', {}, 'Timeline'), gantt),
    h('div', {}, facts)), panel);
  const pick = (key) => {
    const t = st.run.tasks.find((x) => x.name === key), k = instanceKey(key), was = st.fanout + '/' + st.page;
    if (t && isFanout(t)) { st.fanout = st.fanout === key ? '' : key; st.page = 0; }
    if (k) { st.fanout = k.task; st.page = Math.floor(k.index / PAGE); }
    st.sel = key;
    setQuery({ task: key });
    draw();
    // Fetched when another page is shown or the one held lacks the pick,
    // not again for a task of the workflow or an instance of the list.
    if (st.fanout && (st.fanout + '/' + st.page !== was || (k && !taskOf(st, key)))) loadInstances();
  };
  const turn = (page) => { st.page = page; loadInstances(); };
  const drawGraph = () => redraw(dag, drawDAG(runNodes(st.run, st.counts), st.sel, pick));
  const drawTimeline = () => redraw(gantt, drawGantt(st.run, pick));
  const drawInstances = () => redraw(inst, st.fanout ? instanceList(st, pick, turn) : '');
  const draw = () => {
    const r = st.run;
    redraw(head, h('h1', {}, 'Run ', h('span', { class: 'mono' }, shortID(r.id)), ' of ',
      h('a', { id: 'run-workflow', href: '/ui/workflows/' + encodeURIComponent(r.workflow) }, r.workflow), ' ', badge(runStatus(r))));
    redraw(facts, runFacts(r, st.wfGone), runActions(r, msg, load));
    drawGraph();
    drawInstances();
    drawTimeline();
    drawPanel(st, panel);
  };
  const openSelected = () => { // a fan-out or an instance selected by the URL opens the fan-out's instances
    const t = st.sel && st.run.tasks.find((x) => x.name === st.sel);
    const k = instanceKey(st.sel);
    if (t && !st.fanout && isFanout(t)) st.fanout = st.sel;
    if (k && !st.fanout) { st.fanout = k.task; st.page = Math.floor(k.index / PAGE); }
  };
  // loadInstances fetches the open fan-out's page of instances, and the
  // selected instance alone when that page does not hold it.
  const loadInstances = catching(async () => {
    const name = st.fanout, page = st.page, k = instanceKey(st.sel);
    if (!name) return;
    const base = `/runs/${id}/tasks?fanout=${encodeURIComponent(name)}`;
    const r = await api(base + `&limit=${PAGE}` + (page > 0 ? `&after=${page * PAGE - 1}` : ''));
    if (st.fanout !== name || st.page !== page) return; // another was opened meanwhile
    st.inst = { name, page, list: r.body, more: !!r.headers.get('Link') };
    st.one = null;
    if (k && !st.inst.list.some((x) => x.name === st.sel)) {
      const one = await api(`/runs/${id}/tasks?fanout=${encodeURIComponent(k.task)}&limit=1` + (k.index > 0 ? `&after=${k.index - 1}` : ''));
      st.one = one.body[0] || null;
    }
    drawInstances();
    drawPanel(st, panel);
  });
  const load = catching(async () => {
    const seq = st.seq;
    st.run = (await api('/runs/' + id + '?instances=counts')).body;
    for (const [k, c] of Object.entries(st.counts)) if (c.seq <= seq) delete st.counts[k]; // the run is newer
    openSelected();
    // The version it ran (its tasks' declared inputs), fetched once.
    if (!st.wf && !st.wfGone) {
      api(`/workflows/${encodeURIComponent(st.run.workflow)}/versions/${st.run.version}`).then((w) => { st.wf = w.body; drawPanel(st, panel); })
        .catch((err) => { if (err.status === 404) { st.wfGone = true; draw(); } });
    }
    draw();
    if (st.fanout) loadInstances();
  });
  // The server puts the run in the page (summarised): the first draw needs
  // no request for it. An open fan-out's page of instances is not in it:
  // it is fetched once, with the run, when the stream opens.
  const initial = $('#initial-run');
  if (initial) {
    try { st.run = JSON.parse(initial.textContent); openSelected(); draw(); drawn(); } catch (e) { st.run = null; }
  }
  // Without the run in the page, it is fetched now (with the open
  // fan-out's instances); with it, once the stream is open (what changed
  // in between is then read).
  const inPage = !!st.run;
  if (!inPage) { await load(); drawn(); }
  // The stream sends a fan-out's instances as its counts by status
  // (?instances=counts): they redraw its node and the timeline, with no
  // fetch of the run; while its instances are listed (or one is
  // selected), the page of them is fetched again, at most twice a second.
  // Any other event (a task of the workflow, the run) fetches the
  // summarised run again.
  const soon = debounce(load, () => (st.run && st.run.tasks.length > 200 ? 1000 : 100));
  const instancesSoon = debounce(loadInstances, 500);
  const onEvent = (ev) => {
    if (ev.type !== 'instance_counts') { soon(); return; }
    st.counts[ev.task] = { counts: ev.counts || {}, seq: ++st.seq };
    if (!st.run) return;
    drawGraph();
    drawTimeline();
    if (st.fanout === ev.task) { drawInstances(); instancesSoon(); }
  };
  live('?latest=1&instances=counts&run=' + id, onEvent, load, inPage);
  // A running task's bar grows with the clock, events or not.
  setInterval(() => { if (st.run && !ended(st.run)) drawTimeline(); }, 5000);
});

function ended(r) { return ['success', 'failed', 'cancelled'].includes(r.status); }

// instanceKey reads an instance's key ("each[3]"): its fan-out and index;
// null for any other.
function instanceKey(key) {
  const m = /^(.+)\[(\d+)\]$/.exec(key || '');
  return m ? { task: m[1], index: +m[2] } : null;
}

// taskOf is the task of key the page holds: the run's own tasks, then the
// instances fetched.
function taskOf(st, key) {
  if (!st.run || !key) return null;
  return st.run.tasks.find((x) => x.name === key) || (st.inst && st.inst.list.find((x) => x.name === key)) ||
    (st.one && st.one.name === key ? st.one : null);
}

// isFanout: t expanded into instances (a summarised run counts them).
function isFanout(t) { return t.instance == null && (t.instances > 0 || t.instance_counts != null); }

function runStatus(r) {
  if (r.cancel_requested && !ended(r)) return 'cancelling';
  return r.paused && !ended(r) ? 'paused' : r.status;
}

// runFacts lists the run's facts; gone: its version is no longer kept.
function runFacts(r, gone) {
  const params = Object.entries(r.params || {});
  return h('dl', { class: 'facts', id: 'run-facts' },
    h('dt', {}, 'Status'), h('dd', { id: 'run-status' }, badge(runStatus(r))),
    h('dt', {}, 'Run'), h('dd', { class: 'mono' }, r.id),
    h('dt', {}, 'Workflow'), h('dd', {}, r.workflow, ' ',
      h('a', { id: 'run-version', href: `/ui/workflows/${encodeURIComponent(r.workflow)}?version=${r.version}` }, 'v' + r.version),
      gone ? h('span', { class: 'muted', id: 'version-gone' }, ` (version ${r.version} source no longer kept)`) : ''),
    h('dt', {}, 'Trigger'), h('dd', {}, r.trigger || '', r.scheduled_at ? ' (fire of ' + fmtTime(r.scheduled_at) + ')' : ''),
    h('dt', {}, 'Params'), h('dd', {}, params.length ? params.map(([k, v]) => h('div', { class: 'mono' }, k, ' = ', v)) : h('span', { class: 'muted' }, 'none')),
    h('dt', {}, 'Created'), h('dd', {}, fmtTime(r.created_at)),
    h('dt', {}, 'Started'), h('dd', {}, fmtTime(r.started_at)),
    h('dt', {}, 'Ended'), h('dd', {}, fmtTime(r.finished_at)),
    h('dt', {}, 'Duration'), h('dd', {}, fmtDur(span(r.started_at, r.finished_at))));
}

function runActions(r, msg, reload) {
  const act = (verb, label, cls) => h('button', { id: verb + '-run', class: cls, onclick: async (e) => {
    e.target.disabled = true;
    try { await api(`/runs/${r.id}/${verb}`, { method: 'POST' }); flash(msg, `${label}: accepted`, true); } catch (err) { flash(msg, err.message); }
    reload();
  } }, label);
  return h('div', { class: 'actions' },
    !ended(r) && !r.cancel_requested ? act('cancel', 'Cancel run', 'danger') : '',
    ended(r) && r.status !== 'success' ? act('retry', 'Retry run', 'primary') : '');
}

// runNodes makes the DAG's nodes: one per task of the workflow, a fan-out
// as one node counting its instances by status (live: counts the stream
// sent since the run was fetched, by fan-out).
function runNodes(r, live) {
  return r.tasks.filter((t) => t.instance == null).map((t) => {
    const counts = fanCounts(t, live);
    const lines = [`${ICON[t.status] || '•'} ${t.status}` + (t.attempt > 1 ? ` · attempt ${t.attempt}` : '')];
    if (counts) {
      lines[0] = `${ICON[t.status] || '•'} ${t.status} · ${total(counts)} instances`;
      lines.push(Object.entries(counts).map(([s, c]) => `${ICON[s] || s} ${c}`).join('  '));
    } else {
      const d = span(t.started_at || t.dispatched_at, t.finished_at);
      lines.push(d != null ? fmtDur(d) : (t.waiting_on && t.waiting_on.length ? 'waiting: ' + t.waiting_on.join(', ') : ''));
    }
    return { key: t.name, deps: t.depends_on || [], status: t.status, lines };
  });
}

// fanCounts is a fan-out's instances by status: the stream's latest, else
// the run's; null for a task that is not an expanded fan-out.
function fanCounts(t, live) {
  const c = live && live[t.name];
  return c ? c.counts : t.instance_counts || (t.instances > 0 ? {} : null);
}

function total(counts) {
  let n = 0;
  for (const k in counts) n += counts[k];
  return n;
}

// instanceList shows the open fan-out's page of instances (PAGE at a
// time), with its place among them all and the way to the others.
function instanceList(st, pick, turn) {
  const name = st.fanout, t = st.run.tasks.find((x) => x.name === name);
  const all = t ? total(fanCounts(t, st.counts) || {}) : 0;
  const page = st.inst && st.inst.name === name && st.inst.page === st.page ? st.inst : null;
  const rows = page ? page.list : [];
  const from = st.page * PAGE;
  const where = rows.length ? `${from + 1}–${from + rows.length} of ${all}` : page ? `none of ${all} here` : `${all}, loading…`;
  const nav = h('div', { class: 'pager' },
    st.page > 0 ? h('a', { href: '#', id: 'inst-prev', onclick: (e) => { e.preventDefault(); turn(st.page - 1); } }, '« previous') : '',
    page && page.more ? h('a', { href: '#', id: 'inst-next', onclick: (e) => { e.preventDefault(); turn(st.page + 1); } }, 'next »') : '');
  return h('div', { class: 'panel' }, h('h2', {}, `Instances of ${name}`, ' ', h('span', { class: 'muted', id: 'inst-where' }, `(${where})`)),
    h('div', { class: 'inst' }, h('table', {}, h('tbody', {}, rows.map((x) => h('tr', { class: x.name === st.sel ? 'sel' : '', 'data-task': x.name, 'data-status': x.status },
      h('td', {}, h('a', { href: '#', onclick: (e) => { e.preventDefault(); pick(x.name); } }, x.name)),
      h('td', {}, badge(x.paused && x.status === 'pending' ? 'paused' : x.status)), h('td', {}, x.attempt ? 'attempt ' + x.attempt : ''),
      h('td', {}, fmtDur(span(x.started_at || x.dispatched_at, x.finished_at)))))))), nav);
}

// drawGantt draws a bar per attempt of each task of the workflow, and one
// per fan-out from its first instance's dispatch to its end. It reads the
// summarised run: a loop over its tasks, never over instances.
function drawGantt(r, pick) {
  const tasks = r.tasks.filter((t) => t.instance == null);
  let t0 = Infinity, last = -Infinity;
  const start = (x) => { if (x) t0 = Math.min(t0, +new Date(x)); };
  for (const t of tasks) {
    start(t.dispatched_at || t.started_at);
    start(t.instances_started_at);
    for (const a of t.attempts || []) start(a.started_at);
    last = Math.max(last, t.finished_at ? +new Date(t.finished_at) : Date.now());
  }
  if (t0 === Infinity) return h('p', { class: 'muted' }, 'No attempt has started yet.');
  const t1 = Math.max(t0 + 1, r.finished_at ? +new Date(r.finished_at) : last);
  const pct = (x) => (100 * (x - t0)) / (t1 - t0);
  const bar = (name, status, a, b, label) => h('div', { class: 'bar s-' + status, 'data-status': status,
    style: { left: pct(a) + '%', width: Math.max(0.3, pct(b) - pct(a)) + '%' },
    title: `${name}${label}: ${status}, ${fmtDur(b - a)}` }, fmtDur(b - a));
  // barsOf: one bar per attempt of a task (its ended ones, then the one in
  // flight); a fan-out's single bar spans its instances.
  const barsOf = (t) => {
    if (isFanout(t)) {
      if (!t.instances_started_at) return [];
      return [bar(t.name, t.status, +new Date(t.instances_started_at), t.finished_at ? +new Date(t.finished_at) : Date.now(), '')];
    }
    return attemptsOf(t).filter((a) => a.start).map((a) =>
      bar(t.name, a.status, +new Date(a.start), a.end ? +new Date(a.end) : Date.now(), ` attempt ${a.attempt}`));
  };
  return h('div', {}, tasks.map((t) => h('div', { class: 'row', onclick: () => pick(t.name), 'data-task': t.name },
    h('span', { class: 'lbl', title: t.name }, (ICON[t.status] || '') + ' ' + t.name),
    h('div', { class: 'track' }, barsOf(t)))),
  h('div', { class: 'muted' }, `${fmtTime(new Date(t0).toISOString())} → ${fmtDur(t1 - t0)}`));
}

// attemptsOf lists every attempt of a task, oldest first: the ended ones
// the API keeps (attempts), then the current one when it has not ended
// yet (or the API kept no history, as for a task that ended by hand).
function attemptsOf(t) {
  const out = (t.attempts || []).map((a) => ({ attempt: a.attempt, status: a.status, start: a.started_at, end: a.finished_at,
    exit: a.exit_code, error: a.error }));
  const last = out.length ? out[out.length - 1].attempt : 0;
  if (t.attempt > last) {
    const ended = !['dispatched', 'running'].includes(t.status);
    out.push({ attempt: t.attempt, status: t.status, start: t.started_at || t.dispatched_at, end: ended ? t.finished_at : null,
      exit: t.exit_code, error: ended ? t.error : '' });
  }
  return out;
}

// drawAttempts is the task panel's table of attempts (none: what it says
// without any); a row opens its log.
function drawAttempts(t, none, open) {
  const rows = attemptsOf(t);
  if (!rows.length) return h('p', { class: 'muted' }, none);
  return h('table', { id: 'attempt-list' }, h('thead', {}, h('tr', {}, ['#', 'Status', 'Start', 'End', 'Duration', 'Exit / error'].map((c) => h('th', {}, c)))),
    h('tbody', {}, rows.map((a) => h('tr', { 'data-attempt': a.attempt, 'data-status': a.status, onclick: () => open(a.attempt) },
      h('td', {}, a.attempt), h('td', {}, badge(a.status)), h('td', {}, fmtTime(a.start)), h('td', {}, a.end ? fmtTime(a.end) : '—'),
      h('td', {}, fmtDur(span(a.start, a.end))),
      h('td', { class: a.error ? 'err' : '' }, [a.exit != null && (a.end || a.status !== 'running') ? `exit ${a.exit}` : '', a.error ? ` ${a.error}` : ''].join(''))))));
}

// drawPanel shows the selected task: its attempts, inputs and output, and
// the log of the chosen attempt, followed live while it runs.
function drawPanel(st, panel) {
  const t = taskOf(st, st.sel);
  if (!t) { stopLog(st); redraw(panel, st.sel ? '' : h('p', { class: 'muted' }, 'Select a task in the graph to see its attempts and logs.')); return; }
  const spec = st.wf && st.wf.version === st.run.version ? (st.wf.tasks || []).find((x) => x.name === t.task) : null;
  const attempt = st.log && st.log.task === t.name ? st.log.attempt : t.attempt;
  const inFlight = ['dispatched', 'running'].includes(t.status);
  const attempts = [];
  for (let i = 1; i <= t.attempt; i++) {
    attempts.push(h('button', { class: i === attempt ? 'primary' : '', 'data-attempt': i, onclick: () => { stopLog(st); openLog(st, t, i, panel); } }, `attempt ${i}`));
  }
  const latest = [
    h('dt', {}, 'Status'), h('dd', {}, badge(t.status)),
    h('dt', {}, 'Attempt'), h('dd', {}, `${t.attempt}` + (t.retries ? ` of ${t.retries + 1}` : '')),
    t.failures ? [h('dt', {}, 'Failures'), h('dd', {}, t.failures)] : '',
    t.interruptions ? [h('dt', {}, 'Interruptions'), h('dd', {}, t.interruptions)] : '',
    t.error ? [h('dt', {}, 'Error'), h('dd', { class: 'err' }, t.error)] : '',
    t.not_before ? [h('dt', {}, 'Not before'), h('dd', {}, fmtTime(t.not_before))] : '',
    t.waiting_on && t.waiting_on.length ? [h('dt', {}, 'Waiting on'), h('dd', {}, t.waiting_on.join(', '))] : '',
    t.item != null ? [h('dt', {}, 'Item'), h('dd', { class: 'mono' }, JSON.stringify(t.item))] : '',
  ];
  const logBox = st.log && st.log.task === t.name && st.log.el ? st.log.el : h('pre', { class: 'log', id: 'log' });
  // A fan-out has no attempt of its own: its instances have them.
  const none = isFanout(t) ? `a fan-out: pick one of its ${total(fanCounts(t, st.counts) || {})} instances for its attempts and log` : 'no attempt yet';
  redraw(panel, h('div', { class: 'panel', id: 'task' },
    h('h2', {}, 'Task ', h('span', { class: 'mono', id: 'task-name' }, t.name), ' ', badge(t.status)),
    h('div', { class: 'grid' },
      h('div', {},
        h('h3', {}, 'Log'), h('div', { class: 'chips', id: 'attempts' }, attempts.length ? attempts : h('span', { class: 'muted' }, none)),
        h('div', { class: 'muted', id: 'log-state' }, st.log && st.log.task === t.name ? st.log.state : ''), logBox),
      h('div', {},
        h('h3', {}, 'Attempts'), h('div', { id: 'task-attempts' }, drawAttempts(t, none, (i) => { stopLog(st); openLog(st, t, i, panel); })),
        h('h3', {}, 'Now'), h('dl', { class: 'facts' }, latest),
        h('h3', {}, 'Inputs'), t.inputs ? h('pre', { id: 'inputs' }, JSON.stringify(t.inputs, null, 2))
          : spec && spec.inputs ? [h('p', { class: 'muted' }, 'declared (resolved once dispatched):'), h('pre', {}, JSON.stringify(spec.inputs, null, 2))]
            : h('p', { class: 'muted' }, 'none declared'),
        h('h3', {}, 'Output'), t.output !== undefined ? h('pre', { id: 'output' }, JSON.stringify(t.output, null, 2)) : h('p', { class: 'muted' }, 'none')))));
  if (t.attempt > 0 && !(st.log && st.log.task === t.name && st.log.attempt === attempt && (st.log.open || !inFlight))) {
    stopLog(st);
    openLog(st, t, attempt, panel, logBox);
  }
}

window.addEventListener('pagehide', () => document.dispatchEvent(new Event('orkwal-leave')));

function stopLog(st) {
  if (st.log && st.log.abort) st.log.abort.abort();
  st.log = null;
}

const LOG_MAX = 1 << 20; // characters of a log kept on the page

// openLog shows an attempt's log: read whole when it has ended, followed
// (a stream the server ends with the attempt) while it runs.
async function openLog(st, t, attempt, panel, el) {
  el = el || $('#log') || h('pre', { class: 'log', id: 'log' });
  el.textContent = '';
  const follow = attempt === t.attempt && ['dispatched', 'running'].includes(t.status);
  const abort = new AbortController();
  document.addEventListener('orkwal-leave', () => abort.abort(), { once: true });
  const log = { task: t.name, attempt, el, abort, open: follow, state: follow ? 'following live…' : '' };
  st.log = log;
  $('#attempts') && $('#attempts').querySelectorAll('button').forEach((b) => b.classList.toggle('primary', +b.dataset.attempt === attempt));
  const setState = (s) => { log.state = s; const e = $('#log-state'); if (e && st.log === log) e.textContent = s; };
  setState(log.state);
  try {
    const r = await fetch(`/runs/${st.run.id}/tasks/${encodeURIComponent(t.name)}/logs?attempt=${attempt}${follow ? '&follow=1' : ''}`,
      { credentials: 'same-origin', signal: abort.signal });
    if (!r.ok) { setState(((await r.json().catch(() => ({}))).error) || r.statusText); log.open = false; return; }
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const atEnd = el.scrollTop + el.clientHeight >= el.scrollHeight - 4;
      let text = el.textContent + dec.decode(value, { stream: true });
      if (text.length > LOG_MAX) text = '…\n' + text.slice(text.length - LOG_MAX);
      el.textContent = text;
      if (atEnd) el.scrollTop = el.scrollHeight;
    }
    setState(el.textContent ? (follow ? 'the attempt ended' : '') : 'the log is empty');
  } catch (e) {
    if (e.name !== 'AbortError') setState('log: ' + e.message);
  }
  log.open = false;
}

// -- one workflow

// staticNodes makes a workflow version's graph: a node per task, an edge
// per dependency, each with its executor and fan-out.
function staticNodes(tasks) {
  return (tasks || []).map((t) => ({ key: t.name, deps: t.depends_on || [], status: 'defined',
    lines: [t.executor || 'process', t.foreach ? 'foreach ' + t.foreach : t.parallel ? `parallel ${t.parallel}` : t.parallel_from ? 'parallel ' + t.parallel_from : ''] }));
}

function fmtBytes(n) { return n < 1024 ? n + ' B' : (n / 1024).toFixed(n < 10240 ? 1 : 0) + ' KB'; }

const pageWorkflow = catching(async (name) => {
  const msg = h('div', { id: 'msg' });
  const body = h('div');
  const base = '/workflows/' + encodeURIComponent(name);
  $('#main').replaceChildren(msg, body);
  // A version never changes once applied: each is fetched once.
  const details = new Map();
  let wf = null, list = null;
  const wanted = () => new URLSearchParams(location.search).get('version') || String(wf.version);
  const versionRows = () => list.versions.map((v) => h('tr', { 'data-version': v.version, class: String(v.version) === wanted() ? 'sel' : '',
    'aria-current': String(v.version) === wanted() ? 'true' : null },
  h('td', {}, h('a', { href: '?version=' + v.version, onclick: (e) => { e.preventDefault(); setQuery({ version: v.version }, true); showVersion(); } }, 'v' + v.version),
    v.version === list.current ? h('span', { class: 'muted' }, ' current') : ''),
  h('td', {}, when(v.applied_at)), h('td', {}, fmtBytes(v.size)), h('td', {}, v.task_count + (v.task_count === 1 ? ' task' : ' tasks'))));
  const versions = h('tbody');
  const shown = h('div', { id: 'version' });
  // showVersion draws the selected version's graph and source (the
  // current one from the workflow itself).
  const showVersion = catching(async () => {
    const v = wanted();
    redraw(versions, ...versionRows());
    let d = v === String(wf.version) ? { version: wf.version, current: true, tasks: wf.tasks, source: wf.source, applied_at: wf.updated_at } : details.get(v);
    if (!d) {
      try { d = (await api(`${base}/versions/${encodeURIComponent(v)}`)).body; details.set(v, d); } catch (err) {
        if (err instanceof AuthError) return;
        shown.replaceChildren(h('p', { class: 'err', id: 'version-missing', role: 'alert' }, err.message));
        return;
      }
    }
    if (wanted() !== v) return; // another was selected meanwhile
    const nodes = staticNodes(d.tasks);
    shown.replaceChildren(
      h('h2', {}, 'Graph of version ', d.version, d.current ? ' (current)' : ''),
      h('div', { class: 'dag static', id: 'version-graph', 'data-version': d.version }, nodes.length ? drawDAG(nodes, '', () => {}) : h('p', { class: 'muted' }, 'no tasks')),
      h('h2', {}, 'Source of version ', d.version, ' ', h('span', { class: 'muted' }, 'applied ', fmtTime(d.applied_at))),
      h('pre', { id: 'source', 'data-version': d.version }, d.source || '(applied without its YAML source)'));
  });
  const runsBody = h('tbody');
  const drawRuns = (runs) => redraw(runsBody, ...(runs.length ? runs.map(runRow) : [h('tr', {}, h('td', { class: 'muted' }, 'no runs yet'))]));
  const schedule = h('dd', { id: 'schedule' });
  const drawSchedule = () => {
    const sched = wf.schedule;
    schedule.replaceChildren(...(sched ? [h('code', {}, sched.cron), sched.paused ? [' ', badge('paused')] : [' next ', when(sched.next_fire)]] : ['none']));
  };
  const runsURL = '/runs?limit=20&workflow=' + encodeURIComponent(name);
  // load draws everything: on opening, a reset, and a workflow event (a
  // new version, a pause); a run's event redraws the recent runs alone
  // (loadRuns): the versions and the source change only with a version.
  const load = catching(async () => {
    const [w, runs, vs] = await Promise.all([api(base), api(runsURL), api(base + '/versions')]);
    wf = w.body; list = vs.body;
    const sched = wf.schedule;
    drawRuns(runs.body);
    drawSchedule();
    redraw(body,
      h('h1', {}, 'Workflow ', wf.name, ' ', h('span', { class: 'muted' }, 'v' + wf.version)),
      wf.description ? h('p', {}, wf.description) : '',
      h('div', { class: 'actions' }, h('button', { class: 'primary', onclick: () => triggerDialog(wf) }, 'Trigger…'), sched ? pauseButton(wf, load, msg) : '',
        h('a', { class: 'btn', href: '/ui/runs?workflow=' + encodeURIComponent(wf.name) }, 'All runs')),
      h('div', { class: 'grid' }, shown,
        h('div', {},
          h('dl', { class: 'facts' },
            h('dt', {}, 'Version'), h('dd', {}, `${wf.version} (updated ${fmtTime(wf.updated_at)}; first ${fmtTime(wf.created_at)})`),
            h('dt', {}, 'Schedule'), schedule,
            h('dt', {}, 'Params'), h('dd', {}, Object.keys(wf.params || {}).length ? Object.entries(wf.params).map(([k, v]) => h('div', { class: 'mono' }, k, ' = ', v)) : 'none')),
          h('h2', {}, 'Versions ', h('span', { class: 'muted' }, `(${list.versions.length} kept)`)),
          h('table', { id: 'versions' }, h('thead', {}, h('tr', {}, ['Version', 'Applied', 'Size', 'Tasks'].map((t) => h('th', {}, t)))), versions))),
      h('h2', {}, 'Recent runs'),
      h('table', { id: 'recent-runs' }, runsBody));
    await showVersion();
    drawn();
  });
  // loadRuns redraws the recent runs, and the schedule once its next fire
  // has passed (a fire makes a run; the workflow says the next one).
  const loadRuns = catching(async () => {
    const sched = wf && wf.schedule;
    const past = sched && !sched.paused && Date.parse(sched.next_fire) <= Date.now();
    const [runs, w] = await Promise.all([api(runsURL), past ? api(base) : null]);
    if (w && w.body.version !== wf.version) return load();
    if (w) { wf = w.body; drawSchedule(); }
    drawRuns(runs.body);
  });
  await load();
  window.addEventListener('popstate', showVersion);
  const later = debounce(load, 500), runsLater = debounce(loadRuns, 500);
  live('?tasks=0&workflow=' + encodeURIComponent(name), (ev) => (ev.run ? runsLater : later)(), load);
});

document.addEventListener('DOMContentLoaded', route);
