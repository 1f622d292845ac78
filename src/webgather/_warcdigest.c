/* The three SHA-1 digests of a fetch's WARC records in one call, as WARC writes them.
 *
 * digests(head, body, request_block) -> (payload, block, request): "sha1:" + base32 of
 * SHA-1(body), SHA-1(head + body) and SHA-1(request_block). The reference is
 * webgather.store.pagerecords._python_digests (hashlib + records.b32_160), which
 * the tests compare with this one.
 *
 * Why native: per page the Python path makes three hashlib objects, three base32
 * strings of 16 table lookups each, and hashlib drops and retakes the GIL for each
 * buffer over 2 KiB (twice a page), which on the node's one shared CPU hands the
 * GIL to the event loop and waits to get it back. Here the GIL is kept: the
 * hashing is ~10 us a page, less than a hand-over costs.
 * OpenSSL's low-level SHA1 calls (deprecated in 3.0, not removed) skip EVP's
 * per-call method look-up.
 */
#define PY_SSIZE_T_CLEAN
#define OPENSSL_SUPPRESS_DEPRECATED
#include <Python.h>
#include <openssl/sha.h>

static const char B32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/* "sha1:" + the 32 base32 letters of a 20-byte digest (160 bits: no padding). */
static PyObject *sha1_text(const unsigned char digest[SHA_DIGEST_LENGTH]) {
    char out[5 + 32];
    memcpy(out, "sha1:", 5);
    for (int group = 0; group < 4; group++) { /* 5 bytes -> 8 letters */
        const unsigned char *in = digest + 5 * group;
        unsigned long long bits = 0;
        for (int i = 0; i < 5; i++) bits = (bits << 8) | in[i];
        for (int i = 0; i < 8; i++) out[5 + 8 * group + i] = B32[(bits >> (35 - 5 * i)) & 31];
    }
    return PyUnicode_FromStringAndSize(out, sizeof out);
}

static PyObject *digests(PyObject *self, PyObject *args) {
    Py_buffer head, body, request;
    if (!PyArg_ParseTuple(args, "y*y*y*:digests", &head, &body, &request)) return NULL;
    unsigned char payload_md[SHA_DIGEST_LENGTH], block_md[SHA_DIGEST_LENGTH], request_md[SHA_DIGEST_LENGTH];
    SHA_CTX ctx;
    SHA1((const unsigned char *)body.buf, (size_t)body.len, payload_md);
    SHA1_Init(&ctx);
    SHA1_Update(&ctx, head.buf, (size_t)head.len);
    SHA1_Update(&ctx, body.buf, (size_t)body.len);
    SHA1_Final(block_md, &ctx);
    SHA1((const unsigned char *)request.buf, (size_t)request.len, request_md);
    PyBuffer_Release(&head);
    PyBuffer_Release(&body);
    PyBuffer_Release(&request);
    PyObject *a = sha1_text(payload_md), *b = sha1_text(block_md), *c = sha1_text(request_md);
    if (a == NULL || b == NULL || c == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(c);
        return NULL;
    }
    PyObject *result = PyTuple_Pack(3, a, b, c);
    Py_DECREF(a);
    Py_DECREF(b);
    Py_DECREF(c);
    return result;
}

static PyMethodDef methods[] = {
    {"digests", digests, METH_VARARGS,
     "digests(head, body, request_block) -> (payload, block, request) 'sha1:<BASE32>' digests."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_warcdigest", NULL, -1, methods};

PyMODINIT_FUNC PyInit__warcdigest(void) { return PyModule_Create(&module); }
