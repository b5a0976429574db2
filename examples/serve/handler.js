#!/usr/bin/env node
// A --serve handler in Node.js (no packages): hiredhand's line protocol,
// version 1. Replace perform() with your jobs; throw to fail one.
const readline = require('readline');

function perform(msg) {
  const job = msg.job; // the payload as stored in Redis
  if (msg.class === 'FailJob') throw new TypeError('failed on purpose: ' + JSON.stringify(job.args));
  if (msg.class === 'CrashJob') process.exit(3);
}

process.stdout.write(JSON.stringify({ hiredhand: 1 }) + '\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  let answer = { ok: true };
  try { perform(msg); } catch (e) {
    answer = { ok: false, error_class: e.name, error_message: e.message,
               backtrace: String(e.stack).split('\n').slice(1).map((l) => l.trim()) };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
});
