// Module and chunk ids numbered in order of use, not hashed from paths: webpack's default
// ("deterministic") hashes each module's path relative to JupyterLab's staging folder, which
// holds the absolute path of the checkout and of the Python environment, so the same sources
// built in two places gave two different bundles and CI's byte-for-byte check of the committed
// bundle could not pass anywhere but where it was built.
module.exports = {
  optimization: {
    moduleIds: 'natural',
    chunkIds: 'natural'
  }
};
