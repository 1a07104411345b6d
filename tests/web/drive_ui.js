// drive_ui.js URL OUTDIR FUNC - drives liveprof's web UI in Debian's chromium
// through puppeteer-core (no browser download), for tests/e2e/test_web.py.
// Prints one JSON object with what it saw; screenshots go to OUTDIR.
'use strict';

const puppeteer = require('puppeteer-core');
const path = require('path');

const [url, outdir, func] = process.argv.slice(2);
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const out = { errors: [] };
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run',
           '--disable-background-networking', '--disable-dev-shm-usage'],
  });
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => out.errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') out.errors.push(m.text()); });
    await page.setViewport({ width: 1400, height: 1000 });
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForFunction(() => Number(document.body.dataset.updates) >= 1,
                               { timeout: 20000 });

    // Update rate: updates and sample counts seen over 6 s, without reload.
    const u0 = await page.evaluate(() => ({ n: Number(document.body.dataset.updates),
                                             s: Number(document.body.dataset.samples),
                                             t: Date.now() }));
    const times = [];
    let last = u0.n;
    const tEnd = Date.now() + 6000;
    // Gaps between the page's own update times (set when it redraws), so
    // this loop's own polling delay is not counted as the page's.
    while (Date.now() < tEnd) {
      const [n, at] = await page.evaluate(() => [Number(document.body.dataset.updates),
                                                 Number(document.body.dataset.lastUpdate)]);
      if (n !== last) { times.push(at); last = n; }
      await sleep(50);
    }
    const u1 = await page.evaluate(() => ({ n: Number(document.body.dataset.updates),
                                             s: Number(document.body.dataset.samples),
                                             t: Date.now() }));
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    out.updates = u1.n - u0.n;
    out.update_seconds = (u1.t - u0.t) / 1000;
    out.max_gap_ms = gaps.length ? Math.max(...gaps) : null;
    out.samples_grew = u1.s > u0.s;

    // Function names are in the DOM, with their sample counts in <title>.
    out.frames = await page.evaluate(() => {
      const m = {};
      for (const g of document.querySelectorAll('#flame g.fr')) {
        const t = g.querySelector('title').textContent;
        const v = Number((t.match(/: (\d+) samples/) || [0, 0])[1]);
        m[g.dataset.name] = (m[g.dataset.name] || 0) + v;
      }
      return m;
    });
    await page.screenshot({ path: path.join(outdir, '1-flame.png'), fullPage: true });

    // Click a frame: the graph zooms on it.
    // The boxes are redrawn twice a second: click where the frame is drawn.
    const box = await page.evaluate((f) => {
      const r = document.querySelector(`#flame g.fr[data-name="${f}"] rect`).getBoundingClientRect();
      return { x: r.x + Math.min(r.width / 2, 20), y: r.y + r.height / 2 };
    }, func);
    await page.mouse.click(box.x, box.y);
    await sleep(100);
    out.zoom = await page.evaluate(() => ({
      what: document.getElementById('flamewhat').textContent,
      first: document.querySelector('#flame g.fr').dataset.name,
      firstWidth: Number(document.querySelector('#flame g.fr rect').getAttribute('width')),
      svgWidth: document.getElementById('flame').clientWidth,
    }));
    await page.screenshot({ path: path.join(outdir, '2-zoomed.png'), fullPage: true });
    await page.click('#reset');

    // Search highlights the matches.
    await page.type('#search', 'slow_path');
    await sleep(700);
    out.search = await page.evaluate(() => ({
      matches: document.querySelectorAll('#flame g.match').length,
      text: document.getElementById('matched').textContent,
    }));
    await page.evaluate(() => { document.getElementById('search').value = ''; });

    // Split from the page, then wait for the ranked frames.
    await page.click('#func', { clickCount: 3 });
    await page.type('#func', func);
    await page.click('#split');
    await page.waitForFunction(() => /splitting/.test(document.getElementById('msg').textContent),
                               { timeout: 30000 });
    out.split_msg = await page.evaluate(() => document.getElementById('msg').textContent);
    try {
      await page.waitForFunction(() => {
        const r = document.querySelectorAll('#ranks tbody tr.sig');
        return r.length > 0;
      }, { timeout: 40000, polling: 500 });
    } catch (e) {
      out.errors.push('no significant ranked frame within 40 s');
    }
    out.ranks = await page.evaluate(() => [...document.querySelectorAll('#ranks tbody tr')]
      .slice(0, 5).map((tr) => ({ frame: tr.dataset.frame, sig: tr.className === 'sig',
                                  cells: [...tr.cells].map((c) => c.textContent) })));
    out.split_what = await page.evaluate(() => document.getElementById('splitwhat').textContent);
    out.mode = await page.evaluate(() => document.getElementById('mode').value);
    await page.screenshot({ path: path.join(outdir, '3-split-diff.png'), fullPage: true });

    // Change the window from the page: the status line follows.
    await page.click('#winsec', { clickCount: 3 });
    await page.type('#winsec', '5');
    await page.click('#setwin');
    try {
      await page.waitForFunction(() => /5 s window/.test(document.getElementById('status').textContent),
                                 { timeout: 10000 });
      out.window_set = true;
    } catch (e) {
      out.window_set = false;
    }
    // Untrace from the page: the split goes with its trace.
    await page.click('#untrace');
    try {
      await page.waitForFunction(() => document.getElementById('splitbox').hidden &&
                                 !document.querySelector('#traces tbody tr'), { timeout: 10000 });
      out.untraced = true;
    } catch (e) {
      out.untraced = false;
    }

    // A POST without the CSRF header is refused, whatever the page's origin
    // (the browser logs that 403 as an error: keep it out of out.errors).
    out.errors_before_csrf = out.errors.length;
    out.csrf_less = await page.evaluate(async () => {
      const r = await fetch('/api/command', { method: 'POST',
                                              body: JSON.stringify({ cmd: 'unsplit' }) });
      return r.status;
    });
  } finally {
    await browser.close();
  }
  out.errors = out.errors.slice(0, out.errors_before_csrf);
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({ fatal: String(e && e.stack || e) }) + '\n');
  process.exit(1);
});
