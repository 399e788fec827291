"""numba.cuda.np under gpunb: numpy support (`gpunb.cuda.np.numpy_support`)."""
