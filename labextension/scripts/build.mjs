// Build the prebuilt extension with @jupyterlab/builder against the installed JupyterLab's core
// package list (its "staging" folder), without `jupyter labextension build`, which in JupyterLab
// 4.6 asks the network for @jupyterlab/core-meta.
//
// The bundle is kept in the repository (gpunb/notebook/labextension/), so that pip installs -
// wheels and editable installs of a clean clone - carry it without node. Beside it the build
// writes build-info.json: a digest of the sources it was built from (the files SOURCES names,
// in the order and encoding gpunb/notebook/labext.py's source_digest() uses) and the JupyterLab
// whose core package list it was built against. A test compares the digest with the sources,
// and CI rebuilds with that JupyterLab and compares the bundles byte for byte.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const python = process.env.PYTHON || 'python3';
const [staging, version] = execFileSync(python, ['-c',
  'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"));' +
  ' print(jupyterlab.__version__)'],
  { encoding: 'utf8' }).trim().split('\n');
if (!existsSync(join(staging, 'package.json'))) {
  throw new Error(`JupyterLab's staging folder was not found at ${staging}; pip install jupyterlab`);
}
execFileSync('node', ['node_modules/@jupyterlab/builder/lib/build-labextension.js',
  '--core-path', staging, '.'], { stdio: 'inherit' });

// what the bundle is made from (labext.SOURCES lists the same)
const SOURCES = ['package.json', 'package-lock.json', 'tsconfig.json', 'scripts', 'src', 'style'];

function files(path) {
  if (!statSync(path).isDirectory()) {
    return [path];
  }
  return readdirSync(path).sort().flatMap(name => files(join(path, name)));
}

const digest = createHash('sha256');
for (const path of SOURCES.flatMap(files).map(p => relative('.', p).split('\\').join('/')).sort()) {
  // line endings normalised: a checkout with CRLF endings has the same sources
  const text = readFileSync(path, 'utf8').split('\r\n').join('\n');
  digest.update(`${path}\0${text}\0`);
}
const outputDir = JSON.parse(readFileSync('package.json', 'utf8')).jupyterlab.outputDir;
writeFileSync(join(outputDir, 'build-info.json'), JSON.stringify(
  { sources_sha256: digest.digest('hex'), jupyterlab: version }, null, 2) + '\n');
