"""The toolchain tltrace runs itself: the one nvcc build that facts/ (--ptxas) and stages/ (--ptx, --sass) share (`nvcc`)."""
