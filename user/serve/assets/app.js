// liveprof web UI: polls /api/state, draws the flamegraph as SVG in the DOM
// (names stay searchable and readable by tests and screen readers), the
// latency tables and the split. Commands are POSTs carrying the per-process
// CSRF token in a custom header, which a cross-site form cannot send.
'use strict';

const POLL_MS = 500; // the page must update at least once a second
const ROW = 17;
const SVGNS = 'http://www.w3.org/2000/svg';

const ui = {
  state: null,
  csrf: null,
  zoom: [], // names from the root's child down to the zoomed frame
  busy: false,
};

const $ = (id) => document.getElementById(id);

function fmtNs(ns) {
  if (!ns) return '-';
  if (ns >= 1e9) return (ns / 1e9).toFixed(2) + ' s';
  if (ns >= 1e6) return (ns / 1e6).toFixed(2) + ' ms';
  if (ns >= 1e3) return (ns / 1e3).toFixed(1) + ' us';
  return ns + ' ns';
}

function pct(x) {
  return (100 * x).toFixed(1) + '%';
}

function view() {
  return document.querySelector('input[name=view]:checked').value;
}

function hue(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return h;
}

function warmColor(name) {
  const h = hue(name);
  return `rgb(${205 + (h % 50)},${80 + ((h >> 8) % 130)},${40 + ((h >> 16) % 40)})`;
}

// Red: a larger share of the slow calls than of the fast; blue: smaller.
function diffColor(d) {
  const k = Math.min(1, Math.abs(d) * 4);
  const c = Math.round(255 * (1 - k));
  return d > 0 ? `rgb(255,${c},${c})` : `rgb(${c},${c},255)`;
}

function findPath(root, path) {
  let n = root;
  for (const name of path) {
    const next = (n.c || []).find((c) => c.n === name);
    if (!next) return null;
    n = next;
  }
  return n;
}

function childMap(n) {
  const m = new Map();
  for (const c of (n && n.c) || []) m.set(c.n, c);
  return m;
}

function mode() {
  return $('mode').value;
}

function flameTrees() {
  const s = ui.state;
  const mode = $('mode').value;
  if (s.split && mode !== 'all') {
    if (mode === 'slow') return { tree: s.split.slow };
    if (mode === 'fast') return { tree: s.split.fast };
    return { tree: s.split.slow, other: s.split.fast };
  }
  return { tree: s.flame };
}

function drawFlame() {
  const svg = $('flame');
  const { tree, other } = flameTrees();
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  if (!tree || !tree.v) {
    svg.setAttribute('height', ROW * 2);
    $('flamewhat').textContent = '(no samples yet)';
    return;
  }
  let top = findPath(tree, ui.zoom);
  let otherTop = other ? findPath(other, ui.zoom) : null;
  if (!top) {
    ui.zoom = [];
    top = tree;
    otherTop = other;
  }
  const width = svg.clientWidth || 1200;
  const re = searchRe();
  let maxDepth = 0;
  let matched = 0;
  const totalSlow = tree.v;
  const totalFast = other ? other.v : 0;

  const place = (n, o, depth, x, w, path) => {
    if (w < 0.5) return;
    maxDepth = Math.max(maxDepth, depth);
    const g = document.createElementNS(SVGNS, 'g');
    g.setAttribute('class', 'fr');
    g.dataset.name = n.n;
    const r = document.createElementNS(SVGNS, 'rect');
    r.setAttribute('x', x.toFixed(1));
    r.setAttribute('y', depth * ROW);
    r.setAttribute('width', Math.max(w - 0.5, 0.5).toFixed(1));
    r.setAttribute('height', ROW - 1);
    const unit = mode() === 'all' ? ui.state.unit || 'samples' : 'samples';
    let info = `${n.n}: ${n.v} ${unit}, ${pct(n.v / tree.v)}`;
    if (other) {
      const fs = o && totalFast ? o.v / totalFast : 0;
      const ss = n.v / totalSlow;
      r.setAttribute('fill', diffColor(ss - fs));
      info += ` (slow ${pct(ss)}, fast ${pct(fs)})`;
    } else {
      r.setAttribute('fill', depth === 0 ? '#ccc' : warmColor(n.n));
    }
    const t = document.createElementNS(SVGNS, 'title');
    t.textContent = info;
    g.appendChild(t);
    g.appendChild(r);
    if (w > 40) {
      const tx = document.createElementNS(SVGNS, 'text');
      tx.setAttribute('x', (x + 3).toFixed(1));
      tx.setAttribute('y', depth * ROW + 12);
      const chars = Math.floor((w - 6) / 7);
      tx.textContent = n.n.length > chars ? n.n.slice(0, Math.max(chars - 2, 1)) + '..' : n.n;
      g.appendChild(tx);
    }
    if (re && re.test(n.n)) {
      g.classList.add('match');
      matched += n.v;
    }
    g.dataset.path = JSON.stringify(depth === 0 ? ui.zoom.slice(0, -1) : path);
    g.dataset.info = info;
    svg.appendChild(g);
    let cx = x;
    const om = childMap(o);
    for (const c of n.c || []) {
      const cw = (w * c.v) / n.v;
      place(c, om.get(c.n), depth + 1, cx, cw, path.concat([c.n]));
      cx += cw;
    }
  };
  place(top, otherTop, 0, 0, width, ui.zoom);
  svg.setAttribute('height', (maxDepth + 1) * ROW + 2);
  $('matched').textContent = re ? `matched ${pct(matched / Math.max(top.v, 1))}` : '';
  $('flamewhat').textContent =
    (ui.zoom.length ? 'zoomed on ' + ui.zoom[ui.zoom.length - 1] + ' - ' : '') +
    `${tree.v} ${mode() === 'all' ? ui.state.unit || 'samples' : 'samples'}` +
    (other ? ', colour: slow share minus fast share' : '');
}

function searchRe() {
  const s = $('search').value;
  if (!s) return null;
  try {
    return new RegExp(s);
  } catch (e) {
    return null;
  }
}

function histSvg(tr) {
  const w = 220, h = 28;
  const svg = document.createElementNS(SVGNS, 'svg');
  svg.setAttribute('class', 'hist');
  svg.setAttribute('width', w);
  svg.setAttribute('height', h);
  const hist = tr.hist || [];
  if (!hist.length) return svg;
  const lo = Math.log(hist[0][0] || 1), hi = Math.log(hist[hist.length - 1][1]);
  const xOf = (v) => ((Math.log(Math.max(v, 1)) - lo) / Math.max(hi - lo, 1e-9)) * (w - 2) + 1;
  const max = Math.max(...hist.map((b) => b[2]));
  for (const [a, b, n] of hist) {
    const r = document.createElementNS(SVGNS, 'rect');
    const bh = Math.max(1, (h - 2) * n / max);
    r.setAttribute('x', xOf(a));
    r.setAttribute('width', Math.max(1, xOf(b) - xOf(a) - 0.5));
    r.setAttribute('y', h - bh);
    r.setAttribute('height', bh);
    const t = document.createElementNS(SVGNS, 'title');
    t.textContent = `${fmtNs(a)} - ${fmtNs(b)}: ${n} calls`;
    r.appendChild(t);
    svg.appendChild(r);
  }
  for (const p of [tr.p50, tr.p99]) {
    const l = document.createElementNS(SVGNS, 'line');
    l.setAttribute('x1', xOf(p));
    l.setAttribute('x2', xOf(p));
    l.setAttribute('y1', 0);
    l.setAttribute('y2', h);
    svg.appendChild(l);
  }
  return svg;
}

function cell(tr, text) {
  const td = document.createElement('td');
  td.textContent = text;
  tr.appendChild(td);
  return td;
}

function drawTraces() {
  const tb = $('traces').tBodies[0];
  tb.textContent = '';
  for (const t of ui.state.traces) {
    const tr = document.createElement('tr');
    tr.dataset.func = t.func;
    cell(tr, t.func);
    cell(tr, t.calls);
    cell(tr, t.rate.toFixed(1));
    for (const k of ['p50', 'p90', 'p99', 'p999', 'max']) cell(tr, t.line ? '-' : fmtNs(t[k]));
    cell(tr, '').appendChild(histSvg(t));
    tb.appendChild(tr);
  }
}

function drawSplit() {
  const s = ui.state.split;
  const box = $('splitbox');
  for (const v of ['slow', 'fast', 'diff'])
    document.querySelector(`#mode option[value=${v}]`).disabled = !s;
  if (!s) {
    box.hidden = true;
    if ($('mode').value !== 'all') $('mode').value = 'all';
    return;
  }
  box.hidden = false;
  $('splitwhat').textContent =
    `${s.function} at p${s.percentile}: slow >= ${fmtNs(s.threshold_ns)}; ` +
    `sampled calls ${s.slow_calls} slow, ${s.fast_calls} fast; ` +
    `samples ${s.slow_samples} slow, ${s.fast_samples} fast`;
  const tb = $('ranks').tBodies[0];
  tb.textContent = '';
  for (const r of s.ranks) {
    const tr = document.createElement('tr');
    tr.dataset.frame = r.frame;
    if (r.significant) tr.className = 'sig';
    cell(tr, r.frame + (r.significant ? ' *' : ''));
    cell(tr, pct(r.slow));
    cell(tr, pct(r.fast));
    cell(tr, (r.delta >= 0 ? '+' : '') + pct(r.delta));
    cell(tr, r.z.toFixed(1));
    tb.appendChild(tr);
  }
}

const SOURCE_NAMES = { cpu: 'CPU', block: 'blocked (us)', mutex: 'lock waits (us)',
                       inuse: 'heap in use (KiB)', alloc: 'allocated (KiB)' };

// The profiles this run has: CPU always, block/mutex with --offcpu, heap with --alloc.
function drawSources() {
  const sel = $('source');
  const want = ui.state.sources || ['cpu'];
  if ([...sel.options].map((o) => o.value).join() === want.join()) return;
  const cur = sel.value;
  sel.textContent = '';
  for (const s of want) {
    const o = document.createElement('option');
    o.value = s;
    o.textContent = SOURCE_NAMES[s] || s;
    sel.appendChild(o);
  }
  sel.value = want.includes(cur) ? cur : 'cpu';
}

function drawStatus() {
  const s = ui.state;
  $('target').textContent = s.target;
  $('status').textContent =
    `${s.samples} samples at ${s.hz} Hz, ${s.stacks} stacks, ${s.lost} lost, ` +
    `up ${s.uptime_s.toFixed(0)} s, ${s.window ? s.window_s + ' s window' : 'whole run'}`;
}

async function poll() {
  const t0 = performance.now();
  try {
    const r = await fetch(`/api/state?view=${view()}&source=${$('source').value}`,
                          { cache: 'no-store' });
    if (r.ok) {
      ui.state = await r.json();
      ui.csrf = ui.state.csrf;
      drawSources();
      drawStatus();
      drawFlame();
      drawTraces();
      drawSplit();
      const b = document.body.dataset;
      b.updates = Number(b.updates) + 1;
      b.lastUpdate = Date.now();
      b.samples = ui.state.samples;
    }
  } catch (e) {
    $('msg').textContent = 'liveprof is not answering';
    $('msg').className = 'err';
  }
  setTimeout(poll, Math.max(0, POLL_MS - (performance.now() - t0)));
}

async function command(cmd, arg, num) {
  const body = JSON.stringify({ cmd, arg, num });
  let res = { ok: false, msg: 'no answer' };
  try {
    const r = await fetch('/api/command', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Liveprof-Csrf': ui.csrf || '' },
      body,
    });
    const text = await r.text();
    try {
      res = JSON.parse(text);
    } catch (e) {
      res = { ok: false, msg: text.trim() };
    }
  } catch (e) {
    res = { ok: false, msg: String(e) };
  }
  $('msg').textContent = res.msg;
  $('msg').className = res.ok ? '' : 'err';
  if (res.ok && cmd === 'split') $('mode').value = 'diff';
  return res;
}

function wire() {
  $('trace').onclick = () => command('trace', $('func').value.trim());
  $('untrace').onclick = () => command('untrace', $('func').value.trim());
  $('split').onclick = () => command('split', $('func').value.trim(), Number($('pct').value));
  $('unsplit').onclick = () => command('unsplit', '');
  $('setwin').onclick = () => command('window', '', Number($('winsec').value));
  // One listener on the graph, not one per box: the boxes are redrawn on
  // every update, and a click must still land on the frame under the mouse.
  $('flame').addEventListener('click', (e) => {
    const g = e.target.closest('g.fr');
    if (!g) return;
    ui.zoom = JSON.parse(g.dataset.path);
    drawFlame();
  });
  $('flame').addEventListener('mouseover', (e) => {
    const g = e.target.closest('g.fr');
    if (g) $('details').textContent = g.dataset.info;
  });
  $('reset').onclick = () => { ui.zoom = []; if (ui.state) drawFlame(); };
  $('search').oninput = () => { if (ui.state) drawFlame(); };
  $('mode').onchange = () => { ui.zoom = []; if (ui.state) drawFlame(); };
  $('source').onchange = () => { ui.zoom = []; $('mode').value = 'all'; };
  for (const r of document.querySelectorAll('input[name=view]')) r.onchange = () => {};
}

wire();
poll();
