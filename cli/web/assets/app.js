/* app.js -- the pages of `hiredhand web`. Every value from the server is
 * put into the page with textContent or as an attribute value through
 * setAttribute on elements we create: never as markup (no innerHTML), so
 * job data cannot become script. Changes are POSTs carrying the CSRF
 * token of the hh_csrf cookie in X-CSRF-Token. */
'use strict';

var POLL_MS = 5000;
var PAGE = 25;
var timer = null;
/* the live graph: jobs processed and failed between two polls of
 * /api/stats, and stat:processed as each poll read it (one more value
 * than points: the polls the points lie between) */
var live = { processed: [], failed: [], polled: [], last: null };

function el(tag, attrs, kids) {
  var e = document.createElement(tag);
  if (attrs) Object.keys(attrs).forEach(function (k) {
    if (k === 'text') e.textContent = attrs[k];
    else if (k === 'onclick') e.addEventListener('click', attrs[k]);
    else e.setAttribute(k, attrs[k]);
  });
  (kids || []).forEach(function (c) { e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
  return e;
}

function str(v) {
  if (v === null || v === undefined) return '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function time(t) {
  if (!t) return '';
  var d = new Date(t * 1000);
  return isNaN(d) ? '' : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

function ago(sec) {
  if (sec === null || sec === undefined) return '';
  sec = Math.abs(sec);
  if (sec < 1) return Math.round(sec * 1000) + ' ms';
  if (sec < 120) return sec.toFixed(1) + ' s';
  if (sec < 7200) return Math.round(sec / 60) + ' min';
  if (sec < 172800) return (sec / 3600).toFixed(1) + ' h';
  return (sec / 86400).toFixed(1) + ' d';
}

function csrf() {
  var m = document.cookie.match(/(?:^|;\s*)hh_csrf=([0-9a-f]+)/);
  return m ? m[1] : '';
}

function api(path) {
  return fetch('/api/' + path, { credentials: 'same-origin' }).then(function (r) {
    return r.json().then(function (j) {
      if (!r.ok) throw new Error(j.error || r.status);
      return j;
    });
  });
}

function post(path, body) {
  return fetch('/api/' + path, {
    method: 'POST', credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf() },
    body: JSON.stringify(body)
  }).then(function (r) {
    return r.json().then(function (j) {
      if (!r.ok) throw new Error(j.error || r.status);
      return j;
    });
  });
}

function act(path, body, what) {
  if (what && !window.confirm(what)) return;
  post(path, body).then(route, showError);
}

function showError(e) {
  var main = document.getElementById('main');
  main.insertBefore(el('p', { 'class': 'error', id: 'error', text: 'Error: ' + e.message }), main.firstChild);
}

function table(headers, rows, id) {
  var thead = el('thead', null, [el('tr', null, headers.map(function (h) {
    return el('th', { text: h[0], 'class': h[1] || '' });
  }))]);
  var tbody = el('tbody', null, rows);
  var t = el('table', id ? { id: id } : null, [thead, tbody]);
  return t;
}

function td(v, cls) { return el('td', { text: str(v), 'class': cls || '' }); }

function card(k, v, id) {
  return el('div', { 'class': 'card' }, [el('div', { 'class': 'v', id: id || '', text: str(v) }), el('div', { 'class': 'k', text: k })]);
}

function done(page) {
  /* a hook for tests and scripts: the page finished rendering */
  document.body.setAttribute('data-ready', page);
}

function setMain(title, kids) {
  var main = document.getElementById('main');
  while (main.firstChild) main.removeChild(main.firstChild);
  main.appendChild(el('h2', { text: title }));
  kids.forEach(function (k) { main.appendChild(k); });
}

function params() {
  var h = location.hash.replace(/^#\/?/, '');
  var q = h.indexOf('?');
  var p = new URLSearchParams(q >= 0 ? h.slice(q + 1) : '');
  return { path: (q >= 0 ? h.slice(0, q) : h).split('/').map(decodeURIComponent), q: p };
}

function pager(base, start, total, extra) {
  var p = el('div', { 'class': 'pager' });
  var q = function (s) { var u = new URLSearchParams(extra || ''); u.set('start', s); return base + '?' + u.toString(); };
  if (start > 0) p.appendChild(el('a', { href: q(Math.max(0, start - PAGE)), text: '« previous' }));
  p.appendChild(document.createTextNode(' ' + (total ? (start + 1) + '–' + Math.min(start + PAGE, total) + ' of ' + total : 'none') + ' '));
  if (start + PAGE < total) p.appendChild(el('a', { href: q(start + PAGE), text: 'next »' }));
  return p;
}

/* ------------------------------------------------------------ dashboard */

function graph(series) {
  var ns = 'http://www.w3.org/2000/svg';
  var svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'graph');
  svg.setAttribute('viewBox', '0 0 600 160');
  svg.setAttribute('preserveAspectRatio', 'none');
  var max = 1;
  series.forEach(function (s) { s.data.forEach(function (v) { if (v > max) max = v; }); });
  series.forEach(function (s) {
    var n = s.data.length;
    var pts = s.data.map(function (v, i) {
      return (n > 1 ? i * 600 / (n - 1) : 0).toFixed(1) + ',' + (155 - v * 150 / max).toFixed(1);
    });
    var pl = document.createElementNS(ns, 'polyline');
    pl.setAttribute('class', s.cls);
    pl.setAttribute('points', pts.join(' '));
    svg.appendChild(pl);
  });
  return svg;
}

function liveGraph() {
  var box = document.getElementById('live');
  if (!box) return;
  while (box.firstChild) box.removeChild(box.firstChild);
  var svg = graph([{ cls: 'p', data: live.processed }, { cls: 'f', data: live.failed }]);
  /* the numbers drawn, for scripts and tests to read back from the DOM */
  svg.setAttribute('data-processed', live.processed.join(','));
  svg.setAttribute('data-failed', live.failed.join(','));
  svg.setAttribute('data-polled', live.polled.join(','));
  box.appendChild(svg);
}

function sample(s) {
  live.polled.push(s.processed);
  if (live.last) {
    live.processed.push(Math.max(0, s.processed - live.last.processed));
    live.failed.push(Math.max(0, s.failed - live.last.failed));
    if (live.processed.length > 60) { live.processed.shift(); live.failed.shift(); live.polled.shift(); }
  }
  live.last = s;
}

function summary(s) {
  var e = document.getElementById('summary');
  e.textContent = 'Processed ' + s.processed + ' · Failed ' + s.failed + ' · Busy ' + s.workers_size +
    ' · Enqueued ' + s.enqueued + ' · Retries ' + s.retry_size + ' · Dead ' + s.dead_size;
}

function dashboard() {
  Promise.all([api('stats'), api('history?days=30')]).then(function (r) {
    var s = r[0], h = r[1];
    sample(s);
    summary(s);
    var cards = el('div', { 'class': 'cards', id: 'stats' }, [
      card('Processed', s.processed, 'stat-processed'), card('Failed', s.failed, 'stat-failed'),
      card('Busy', s.workers_size, 'stat-busy'), card('Enqueued', s.enqueued, 'stat-enqueued'),
      card('Retries', s.retry_size, 'stat-retries'), card('Scheduled', s.scheduled_size, 'stat-scheduled'),
      card('Dead', s.dead_size, 'stat-dead'), card('Processes', s.processes_size, 'stat-processes')]);
    var qrows = (s.queues || []).map(function (q) {
      return el('tr', null, [el('td', null, [el('a', { href: '#/queue/' + encodeURIComponent(q.name), text: q.name })]),
        td(q.size === null ? '?' : q.size, 'num'), td(ago(q.latency), 'num')]);
    });
    var hist = (h.history || []).slice().reverse();
    var hrows = (h.history || []).map(function (d) {
      return el('tr', null, [td(d.date), td(d.processed, 'num'), td(d.failed, 'num')]);
    });
    var ri = h.redis || {};
    var redis = el('div', { 'class': 'cards', id: 'redis' }, [
      card('Redis version', ri.redis_version || '?'), card('Uptime (days)', ri.uptime_in_days || '?'),
      card('Connections', ri.connected_clients || '?'), card('Memory', ri.used_memory_human || '?'),
      card('Peak memory', ri.used_memory_peak_human || '?')]);
    setMain('Dashboard', [cards,
      el('h3', { text: 'Live (jobs per ' + POLL_MS / 1000 + ' s)' }),
      el('div', { 'class': 'legend' }, [el('span', { 'class': 'p', text: '■ processed' }), el('span', { 'class': 'f', text: '■ failed' })]),
      el('div', { id: 'live' }),
      el('h3', { text: 'History (30 days)' }),
      graph([{ cls: 'p', data: hist.map(function (d) { return d.processed; }) }, { cls: 'f', data: hist.map(function (d) { return d.failed; }) }]),
      table([['Date'], ['Processed', 'num'], ['Failed', 'num']], hrows, 'history'),
      el('h3', { text: 'Queues' }), table([['Queue'], ['Size', 'num'], ['Latency', 'num']], qrows, 'queues'),
      el('h3', { text: 'Redis' }), redis]);
    liveGraph();
    done('dashboard');
    timer = setTimeout(poll, POLL_MS);
  }, showError);
}

function poll() {
  api('stats').then(function (s) {
    sample(s);
    summary(s);
    ['processed', 'failed'].forEach(function (k) {
      var e = document.getElementById('stat-' + k);
      if (e) e.textContent = str(s[k]);
    });
    liveGraph();
    timer = setTimeout(poll, POLL_MS);
  }, function () { timer = setTimeout(poll, POLL_MS); });
}

/* ----------------------------------------------------------------- busy */

function busy(q) {
  var start = parseInt(q.get('start') || '0', 10) || 0;
  Promise.all([api('processes?start=' + start + '&count=' + PAGE), api('busy?start=0&count=500')]).then(function (r) {
    var ps = r[0], jobs = r[1];
    var prows = ps.processes.map(function (p) {
      var state = p.stopping ? 'stopping' : p.quiet ? 'quiet' : '';
      return el('tr', null, [td(p.identity), td(p.tag), td((p.labels || []).join(', ')), td(p.concurrency, 'num'),
        td(p.busy, 'num'), td(p.rss ? Math.round(p.rss / 1024) + ' MB' : '', 'num'), td(time(p.started_at)),
        td(state), el('td', null, [
          el('button', { text: 'Quiet', onclick: function () { act('process', { identity: p.identity, signal: 'quiet' }); } }),
          el('button', { 'class': 'danger', text: 'Stop', onclick: function () { act('process', { identity: p.identity, signal: 'stop' }, 'Stop ' + p.identity + '?'); } })])]);
    });
    var jrows = jobs.jobs.map(function (j) {
      return el('tr', null, [td(j.identity), td(j.thread), td(j.queue), td(j['class']), td(j.jid), td(time(j.run_at))]);
    });
    setMain('Busy', [el('h3', { text: 'Processes' }),
      table([['Identity'], ['Tag'], ['Labels'], ['Threads', 'num'], ['Busy', 'num'], ['RSS', 'num'], ['Started'], ['State'], ['']], prows, 'processes'),
      pager('#/busy', start, ps.total),
      el('h3', { text: 'Jobs running (' + jobs.total + ')' }),
      table([['Process'], ['Thread'], ['Queue'], ['Job'], ['JID'], ['Started']], jrows, 'running')]);
    done('busy');
  }, showError);
}

/* --------------------------------------------------------------- queues */

function queues() {
  api('queues').then(function (qs) {
    var rows = qs.map(function (q) {
      return el('tr', null, [el('td', null, [el('a', { href: '#/queue/' + encodeURIComponent(q.name), text: q.name })]),
        td(q.size === null ? str(q.error) : q.size, 'num'), td(ago(q.latency), 'num'),
        el('td', null, [el('button', { 'class': 'danger', text: 'Clear', onclick: function () {
          act('queue/clear', { name: q.name }, 'Delete every job of queue ' + q.name + '?');
        } })])]);
    });
    setMain('Queues', [table([['Queue'], ['Size', 'num'], ['Latency', 'num'], ['']], rows, 'queues')]);
    done('queues');
  }, showError);
}

function queue(name, q) {
  var start = parseInt(q.get('start') || '0', 10) || 0;
  api('queue?name=' + encodeURIComponent(name) + '&start=' + start + '&count=' + PAGE).then(function (d) {
    var rows = d.jobs.map(function (j) {
      /* the args as the server cut them (2000 characters); Delete names the
       * entry by its digest, never sends it back whole: every entry has
       * one, an entry that is no job (plain text, [1,2]) too */
      return el('tr', null, [td(j['class']), td(j.args !== undefined ? j.args : j.payload, 'args'), td(j.jid),
        td(time(j.enqueued_at)), el('td', null, j.digest ? [el('button', { 'class': 'danger', text: 'Delete', onclick: function () {
          act('queue/delete', { name: name, digest: j.digest });
        } })] : [])]);
    });
    setMain('Queue ' + name, [el('p', { text: 'Size ' + d.size + ', latency ' + ago(d.latency) }),
      table([['Job'], ['Arguments'], ['JID'], ['Enqueued'], ['']], rows, 'jobs'),
      pager('#/queue/' + encodeURIComponent(name), start, d.size)]);
    done('queue');
  }, showError);
}

/* ------------------------------------------------------------- job sets */

var TITLES = { retry: 'Retries', scheduled: 'Scheduled', dead: 'Dead' };

function jobset(set, q) {
  var start = parseInt(q.get('start') || '0', 10) || 0;
  var filt = { 'class': q.get('class') || '', queue: q.get('queue') || '', error: q.get('error') || '' };
  var rev = q.get('reverse') === '1';
  var u = new URLSearchParams({ set: set, start: start, count: PAGE });
  if (rev) u.set('reverse', '1');
  Object.keys(filt).forEach(function (k) { if (filt[k]) u.set(k, filt[k]); });
  api('set?' + u.toString()).then(function (d) {
    var boxes = [];
    var rows = d.entries.map(function (e) {
      var cb = el('input', { type: 'checkbox', value: e.jid });
      boxes.push(cb);
      return el('tr', null, [el('td', null, [cb]),
        td(time(e.score)),
        /* an entry without a jid has no page to link to: its row shows all of it */
        el('td', null, [e.jid ? el('a', { href: '#/job/' + set + '/' + encodeURIComponent(e.jid), text: e.jid }) : el('span', { 'class': 'nojid', text: '(no jid)' })]),
        /* an entry whose bytes are not UTF-8 (valid false) has the class and args of its U+FFFD text */
        td(e.valid || e['class'] ? e['class'] : '(not a job)'), td(e.queue), td(e.valid || e.args !== null ? e.args : e.payload, 'args'), td(e.retry_count, 'num'),
        td((e.error_class ? e.error_class + ': ' : '') + str(e.error_message), 'err')]);
    });
    var inputs = {};
    var tools = el('form', { 'class': 'tools', id: 'filter' }, ['class', 'queue', 'error'].map(function (k) {
      inputs[k] = el('input', { name: k, placeholder: k, value: filt[k] });
      return inputs[k];
    }).concat([el('button', { type: 'submit', text: 'Filter' })]));
    tools.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var f = new URLSearchParams();
      Object.keys(inputs).forEach(function (k) { if (inputs[k].value) f.set(k, inputs[k].value); });
      location.hash = '#/' + set + '?' + f.toString();
    });
    var actions = set === 'scheduled' ? ['enqueue', 'delete', 'kill'] : set === 'dead' ? ['retry', 'delete'] : ['retry', 'delete', 'kill'];
    var selected = function () { return boxes.filter(function (b) { return b.checked; }).map(function (b) { return b.value; }); };
    var bar = el('div', { 'class': 'tools' }, actions.map(function (a) {
      return el('button', { text: a + ' selected', onclick: function () {
        var jids = selected();
        if (jids.length) act('set', { set: set, action: a, jids: jids });
      } });
    }).concat(actions.map(function (a) {
      return el('button', { 'class': 'danger', text: a + ' all' + (d.filtered ? ' matching' : ''), onclick: function () {
        var b = { set: set, action: a, all: true };
        Object.keys(filt).forEach(function (k) { if (filt[k]) b[k] = filt[k]; });
        act('set', b, a + ' every ' + (d.filtered ? 'matching ' : '') + 'entry of ' + TITLES[set] + '?');
      } });
    })));
    var sortq = new URLSearchParams(q.toString());
    sortq.delete('start');
    if (rev) sortq.delete('reverse'); else sortq.set('reverse', '1');
    var kids = [tools, bar,
      table([[''], ['When'], ['JID'], ['Job'], ['Queue'], ['Arguments'], ['Retries', 'num'], ['Error']], rows, 'entries'),
      el('a', { href: '#/' + set + '?' + sortq.toString(), id: 'sort', text: rev ? 'sort: oldest first' : 'sort: newest first' })];
    if (d.filtered) {
      kids.push(el('p', { 'class': 'note', id: 'scan', text: 'Filtered: scanned ranks ' + d.start + '–' + d.next + ' of ' + d.size +
        ' (at most ' + d.scan_limit + ' per page).' }));
      if (!d.complete) {
        var nq = new URLSearchParams(q.toString());
        nq.set('start', d.next);
        kids.push(el('a', { href: '#/' + set + '?' + nq.toString(), text: 'scan further »' }));
      }
    } else {
      var extra = new URLSearchParams(q.toString());
      kids.push(pager('#/' + set, start, d.size, extra.toString()));
    }
    setMain(TITLES[set] + ' (' + d.size + ')', kids);
    done(set);
  }, showError);
}

function job(set, jid) {
  api('job?set=' + set + '&jid=' + encodeURIComponent(jid)).then(function (d) {
    var kids = [];
    d.entries.forEach(function (e) {
      kids.push(table([['Field'], ['Value']], [
        ['JID', e.jid], ['Job', e['class']], ['Queue', e.queue], ['Arguments', e.args], ['When', time(e.score)],
        ['Enqueued', time(e.enqueued_at)], ['Failed', time(e.failed_at)], ['Retry count', e.retry_count],
        ['Error class', e.error_class], ['Error message', e.error_message]].map(function (r) {
        return el('tr', null, [td(r[0]), td(r[1], 'args')]);
      }), 'job'));
      if (e.backtrace) {
        kids.push(el('h3', { text: 'Backtrace' }));
        kids.push(el('pre', { id: 'backtrace', text: e.backtrace.map(str).join('\n') }));
      }
      kids.push(el('h3', { text: 'Payload' }));
      kids.push(el('pre', { id: 'payload', text: e.payload }));
    });
    var actions = set === 'scheduled' ? ['enqueue', 'delete', 'kill'] : set === 'dead' ? ['retry', 'delete'] : ['retry', 'delete', 'kill'];
    if (d.entries.length) {
      kids.unshift(el('div', { 'class': 'tools' }, actions.map(function (a) {
        return el('button', { text: a, onclick: function () {
          post('set', { set: set, action: a, jids: [jid] }).then(function () { location.hash = '#/' + set; }, showError);
        } });
      })));
    }
    setMain('Job ' + jid, kids);
    done('job');
  }, showError);
}

/* -------------------------------------------------------------- metrics */

function metrics(q) {
  var minutes = parseInt(q.get('minutes') || '60', 10) || 60;
  api('metrics?minutes=' + minutes).then(function (d) {
    var rows = d.classes.map(function (m) {
      return el('tr', null, [td(m['class']), td(m.processed, 'num'), td(m.failed, 'num'),
        td((m.ms / 1000).toFixed(2), 'num'), td(m.avg_ms.toFixed(1), 'num')]);
    });
    var links = el('p', null, [60, 180, 480].map(function (n) {
      return el('a', { href: '#/metrics?minutes=' + n, text: 'last ' + n / 60 + ' h  ' });
    }));
    setMain('Metrics (last ' + d.minutes + ' minutes)', [links,
      table([['Job'], ['Processed', 'num'], ['Failed', 'num'], ['Total time (s)', 'num'], ['Average (ms)', 'num']], rows, 'metrics'),
      el('p', { 'class': 'note', text: 'From the per-minute keys job metrics write (hiredhand work --job-metrics, Sidekiq 7/8).' })]);
    done('metrics');
  }, showError);
}

/* ---------------------------------------------------------------- cron */

function cronQuery(ns) { return ns ? '?namespace=' + encodeURIComponent(ns) : ''; }

/* A job's page: its namespace and the layout of its copy (a job saved in
 * both sidekiq-cron layouts has two rows; each links to its own copy). */
function cronJobHref(j, ns) {
  var q = [];
  if (ns) q.push('namespace=' + encodeURIComponent(ns));
  if (j.layout) q.push('layout=' + j.layout);
  return '#/cron/' + encodeURIComponent(j.name) + (q.length ? '?' + q.join('&') : '');
}

/* The note on each copy of a job saved in both layouts: both run each tick. */
function cronTwinNote(j) {
  return j.also_in_layout ? 'layout ' + j.layout + ' copy; also in layout ' + j.also_in_layout + ': both run each tick' : '';
}

/* The buttons of one periodic job: POST /api/cron, as `hiredhand cron
 * enqueue|enable|disable|delete NAME --layout N` (the layout of the row's
 * own copy: a job saved in both layouts is refused without it); then
 * after() (afterDelete() for Delete, when given). */
function cronButtons(j, after, afterDelete) {
  var body = function (a) {
    var b = { name: j.name, action: a };
    if (j.namespace) b.namespace = j.namespace;
    if (j.layout) b.layout = j.layout;
    return b;
  };
  var press = function (a, what) {
    return function () {
      if (what && !window.confirm(what)) return;
      post('cron', body(a)).then(a === 'delete' && afterDelete ? afterDelete : after, showError);
    };
  };
  return [el('button', { text: 'Enqueue now', 'data-action': 'enqueue', onclick: press('enqueue') }),
    j.status === 'enabled' ? el('button', { text: 'Disable', 'data-action': 'disable', onclick: press('disable') })
      : el('button', { text: 'Enable', 'data-action': 'enable', onclick: press('enable') }),
    el('button', { 'class': 'danger', text: 'Delete', 'data-action': 'delete', onclick: press('delete', 'Delete periodic job ' + j.name + '?') })];
}

function cronList(q) {
  var ns = q.get('namespace') || '';
  api('cron' + cronQuery(ns)).then(function (jobs) {
    var rows = jobs.map(function (j) {
      return el('tr', { 'class': j.status === 'enabled' ? '' : 'disabled' }, [
        /* a name that is not UTF-8 arrives as \xNN text, the name of another
         * job (or none): shown, but no link and no buttons */
        j.name_base64 ? td(j.name) : el('td', null, [el('a', { href: cronJobHref(j, ns), text: j.name })].concat(
          j.also_in_layout ? [el('div', { 'class': 'error twin', text: cronTwinNote(j) })] : [])),
        td(j.status), td(j.cron), td(j['class']), td(j.queue), td(j.last_enqueue_time), td(time(j.next)),
        td(j.error, 'err'), el('td', null, j.name_base64 ? [] : cronButtons(j, route))]);
    });
    var form = el('form', { 'class': 'tools', id: 'cron-namespace' }, [
      el('input', { name: 'namespace', placeholder: 'namespace (default)', value: ns }), el('button', { type: 'submit', text: 'Show' })]);
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      location.hash = '#/cron' + cronQuery(form.elements.namespace.value);
    });
    setMain('Cron (' + jobs.length + ')', [form,
      table([['Name'], ['Status'], ['Cron'], ['Job'], ['Queue'], ['Last enqueue'], ['Next'], ['Error'], ['']], rows, 'cron'),
      el('p', { 'class': 'note', text: 'Periodic jobs (sidekiq-cron\'s) of namespace ' + (ns || 'default') + '.' })]);
    done('cron');
  }, showError);
}

function cronJob(name, q) {
  var ns = q.get('namespace') || '';
  var layout = q.get('layout') || '';
  api('cron/job?name=' + encodeURIComponent(name) + (ns ? '&namespace=' + encodeURIComponent(ns) : '') +
    (layout ? '&layout=' + encodeURIComponent(layout) : '')).then(function (j) {
    var rows = [['Name', j.name], ['Namespace', j.namespace], ['Layout', j.layout ? j.layout + (j.also_in_layout ? ' (' + cronTwinNote(j) + ')' : '') : ''],
      ['Status', j.status], ['Cron', j.cron], ['Job', j['class']],
      ['Queue', j.queue], ['Arguments', j.args], ['Description', j.description], ['Source', j.source],
      ['Last enqueue', j.last_enqueue_time], ['Next', time(j.next)], ['Error', j.error]].map(function (r) {
      return el('tr', null, [td(r[0]), td(r[1], 'args')]);
    });
    var hist = (j.history || []).map(function (h) {
      return el('tr', null, typeof h === 'object' ? [td(h.jid), td(h.enqueued)] : [td(h), td('')]);
    });
    /* after Delete there is no job left to show: back to the list */
    var buttons = cronButtons(j, route, function () { location.hash = '#/cron' + cronQuery(ns); });
    setMain('Cron job ' + j.name, [el('div', { 'class': 'tools' }, buttons), table([['Field'], ['Value']], rows, 'cron-job'),
      el('h3', { text: 'Last runs' }), table([['JID'], ['Enqueued']], hist, 'cron-history')]);
    done('cron-job');
  }, showError);
}

/* --------------------------------------------------------------- router */

function route() {
  if (timer) { clearTimeout(timer); timer = null; }
  var p = params(), page = p.path[0] || '';
  document.body.removeAttribute('data-ready');
  Array.prototype.forEach.call(document.querySelectorAll('#nav a'), function (a) {
    a.className = a.getAttribute('href') === '#/' + page ? 'active' : '';
  });
  if (page === '') dashboard();
  else if (page === 'busy') busy(p.q);
  else if (page === 'queues') queues();
  else if (page === 'queue') queue(p.path[1] || '', p.q);
  else if (page === 'retry' || page === 'scheduled' || page === 'dead') jobset(page, p.q);
  else if (page === 'metrics') metrics(p.q);
  else if (page === 'cron' && p.path.length > 1) cronJob(p.path.slice(1).join('/'), p.q);
  else if (page === 'cron') cronList(p.q);
  else if (page === 'job') job(p.path[1], p.path.slice(2).join('/'));
  else setMain('Not found', []);
}

window.addEventListener('hashchange', route);
document.addEventListener('DOMContentLoaded', route);
