"""Linear transforms: the discrete Fourier transforms of ``np.fft`` (``fft``), convolutions and
correlations (``convolve``), padding (``pad``).  Each is linear (bilinear for the
convolutions), so its forward rule is the function of the tangent and its reverse rule the
adjoint, itself a transform of the same family.  Registers nothing (``gibbous.library``)."""
