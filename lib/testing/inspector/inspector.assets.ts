/**
 * The inspector's stylesheet, script and icon, as strings so that the build ships them with the emulator and the
 * page loads nothing from elsewhere (the Content-Security-Policy allows only these, from the emulator itself).
 */
export const INSPECTOR_CSS = `
:root { color-scheme: light dark; --ok: #1a7f37; --bad: #cf222e; --muted: #6e7781; --line: #d0d7de; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 0 16px 48px; }
header { border-bottom: 1px solid var(--line); margin-bottom: 8px; }
h1 { font-size: 20px; margin: 16px 0 4px; } h2 { font-size: 16px; margin: 24px 0 8px; } h4 { margin: 10px 0 4px; }
nav a { margin-right: 12px; } small, .empty, .why { color: var(--muted); }
.mono, pre, code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
table { border-collapse: collapse; width: 100%; margin: 4px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 6px; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
table.rules th, table.rules td:nth-child(2), table.rules td.num { white-space: nowrap; overflow-wrap: normal; }
td.num { text-align: right; white-space: nowrap; }
.fields th { width: 140px; font-weight: 600; }
pre { background: rgba(127, 127, 127, 0.1); padding: 8px; overflow-x: auto; margin: 0; }
.badge { border-radius: 10px; padding: 1px 8px; font-size: 12px; font-weight: 600; color: #fff; background: var(--muted); }
.badge.accepted { background: var(--ok); } .badge.rejected { background: var(--bad); } .badge.fault { background: #9a6700; }
details.exchange { border: 1px solid var(--line); border-left-width: 4px; border-radius: 4px; margin: 6px 0; }
details.exchange.accepted { border-left-color: var(--ok); } details.exchange.rejected { border-left-color: var(--bad); }
details.exchange.fault { border-left-color: #9a6700; }
summary { cursor: pointer; padding: 6px 8px; } summary > * { margin-right: 8px; }
.exchange-body { padding: 0 10px 10px; } .request span { margin-right: 14px; white-space: nowrap; }
tr.failed, td.failed { background: rgba(207, 34, 46, 0.12); } tr.failed > td:nth-child(2) { color: var(--bad); font-weight: 600; }
tr.ok > td:nth-child(2) { color: var(--ok); } tr.not-checked { color: var(--muted); }
tr.decisive > th::after { content: " ← answered"; color: var(--bad); font-weight: 400; }
.notice { padding: 6px 10px; border-radius: 4px; } .notice.ok { background: rgba(26, 127, 55, 0.12); }
.notice.failed { background: rgba(207, 34, 46, 0.12); }
form.inline { display: inline; } form.stacked label { margin-right: 10px; } label.auto { white-space: nowrap; }
button { font: inherit; padding: 1px 8px; } input[type=number] { width: 90px; }
textarea { display: block; width: 100%; font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
`;

/**
 * Keeps open exchanges open across reloads, puts a chosen certificate file's text into the upload form, and, when
 * asked, reloads every two seconds (not while typing).
 */
export const INSPECTOR_JS = `'use strict';
(function () {
  var OPEN = 'emulator-inspector-open';
  var AUTO = 'emulator-inspector-auto';
  var open = JSON.parse(sessionStorage.getItem(OPEN) || '[]');
  document.querySelectorAll('details[data-key]').forEach(function (details) {
    if (open.indexOf(details.dataset.key) >= 0) details.open = true;
    details.addEventListener('toggle', function () {
      var keys = JSON.parse(sessionStorage.getItem(OPEN) || '[]').filter(function (key) {
        return key !== details.dataset.key;
      });
      if (details.open) keys.push(details.dataset.key);
      sessionStorage.setItem(OPEN, JSON.stringify(keys.slice(-50)));
    });
  });
  document.querySelectorAll('input.certificate-file').forEach(function (input) {
    input.addEventListener('change', function () {
      var file = input.files && input.files[0];
      var target = input.form && input.form.querySelector('textarea[name=certificatePem]');
      if (!file || !target) return;
      file.text().then(function (text) {
        target.value = text;
      });
    });
  });
  var auto = document.getElementById('auto-refresh');
  if (!auto) return;
  auto.checked = sessionStorage.getItem(AUTO) === 'on';
  auto.addEventListener('change', function () {
    sessionStorage.setItem(AUTO, auto.checked ? 'on' : 'off');
  });
  setInterval(function () {
    var typing = document.activeElement && /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName);
    if (auto.checked && !typing) location.reload();
  }, 2000);
})();
`;

export const INSPECTOR_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#1a7f37"/><path d="M4.5 8.5l2.5 2.5 4.5-5" stroke="#fff" stroke-width="2" fill="none"/></svg>`;
