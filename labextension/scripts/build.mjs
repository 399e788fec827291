// Build the prebuilt extension with @jupyterlab/builder against the installed JupyterLab's core
// package list (its "staging" folder), without `jupyter labextension build`, which in JupyterLab
// 4.6 asks the network for @jupyterlab/core-meta.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const python = process.env.PYTHON || 'python3';
const staging = execFileSync(python, ['-c',
  'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))'],
  { encoding: 'utf8' }).trim();
if (!existsSync(join(staging, 'package.json'))) {
  throw new Error(`JupyterLab's staging folder was not found at ${staging}; pip install jupyterlab`);
}
execFileSync('node', ['node_modules/@jupyterlab/builder/lib/build-labextension.js',
  '--core-path', staging, '.'], { stdio: 'inherit' });
