cdef object unlz4_from(const unsigned char* p, Py_ssize_t n, Py_ssize_t cap, int magic)
