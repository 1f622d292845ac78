/* webgather._urlcore: a page's links joined and canonicalized in one C call.
 *
 * The native twin of webgather.urls.resolve_link/canonicalize and of
 * webgather.parse.links._resolve_all; the Python code stays the reference and
 * the fallback (tests run both and compare). ada's C API is NOT linked here:
 * webgather.parse.native hands us the addresses of the functions that the
 * already-imported ada_url cffi module exports, after checking their C types,
 * so no second copy of ada is built or loaded.
 *
 * Canonical tail (as webgather.urls._finish): only http(s) URLs; the fragment
 * and credentials (user:pass@) dropped, port 0 refused; after the authority, %XX escapes upper-cased and unreserved ones
 * (A-Z a-z 0-9 - . _ ~) decoded -- except hex digits when the tail also holds
 * a stray "%" (decoding them could form a new escape). Bytes are scanned as
 * UTF-8: "%" and hex digits are ASCII, never inside a multi-byte sequence, so
 * this matches the str regex of the Python code.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef void *ada_url;
typedef struct {
    const char *data;
    size_t length;
} ada_string;

static ada_url (*ada_parse_fn)(const char *, size_t);
static ada_url (*ada_parse_with_base_fn)(const char *, size_t, const char *, size_t);
static bool (*ada_is_valid_fn)(ada_url);
static ada_string (*ada_get_href_fn)(ada_url);
static void (*ada_free_fn)(ada_url);

static int is_hex(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
}

static int hex_value(unsigned char c) {
    if (c <= '9') return c - '0';
    if (c <= 'F') return c - 'A' + 10;
    return c - 'a' + 10;
}

static int is_unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~';
}

static unsigned char upper_hex(unsigned char c) {
    return (c >= 'a' && c <= 'f') ? (unsigned char)(c - 'a' + 'A') : c;
}

/* True when s[i] starts a %XX escape of the tail s[0:n]. */
static int is_escape(const unsigned char *s, size_t n, size_t i) {
    return s[i] == '%' && i + 2 < n && is_hex(s[i + 1]) && is_hex(s[i + 2]);
}

/* True when the tail holds a "%" not followed by two hex digits. */
static int has_stray_percent(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && !is_escape(s, n, i)) return 1;
    }
    return 0;
}

/* The escapes of tail s[0:n] normalized into out (room for n bytes); returns the length. */
static size_t normalize_tail(const unsigned char *s, size_t n, unsigned char *out, int keep_hex) {
    size_t o = 0, i = 0;
    while (i < n) {
        if (is_escape(s, n, i)) {
            unsigned char ch = (unsigned char)(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
            if (is_unreserved(ch) && !(keep_hex && is_hex(ch))) {
                out[o++] = ch;
            } else {
                out[o++] = '%';
                out[o++] = upper_hex(s[i + 1]);
                out[o++] = upper_hex(s[i + 2]);
            }
            i += 3;
        } else {
            out[o++] = s[i++];
        }
    }
    return o;
}

/* The canonical form of ada's serialization href[0:n] as a new str, None, or NULL (error). */
static PyObject *finish(const char *href, size_t n) {
    const unsigned char *s = (const unsigned char *)href;
    size_t head;
    if (n >= 7 && memcmp(s, "http://", 7) == 0) {
        head = 7;
    } else if (n >= 8 && memcmp(s, "https://", 8) == 0) {
        head = 8;
    } else {
        Py_RETURN_NONE;
    }
    const unsigned char *hash = memchr(s, '#', n);
    size_t end = hash ? (size_t)(hash - s) : n;
    const unsigned char *slash = memchr(s + head, '/', end - head);
    size_t at = slash ? (size_t)(slash - s) : end;
    size_t skip = 0; /* credentials (user:pass@) after the scheme: dropped */
    for (size_t i = at; i > head; i--) {
        if (s[i - 1] == '@') {
            skip = i - head;
            break;
        }
    }
    if (at - head - skip >= 2 && s[at - 1] == '0' && s[at - 2] == ':') Py_RETURN_NONE; /* port 0 */
    int escapes = slash != NULL && memchr(slash, '%', end - at) != NULL;
    if (!skip && !escapes) {
        return PyUnicode_DecodeUTF8(href, (Py_ssize_t)end, NULL);
    }
    unsigned char stack[1024];
    unsigned char *out = end <= sizeof stack ? stack : PyMem_Malloc(end);
    if (out == NULL) return PyErr_NoMemory();
    memcpy(out, s, head);
    memcpy(out + head, s + head + skip, at - head - skip);
    size_t length = at - skip;
    if (escapes) {
        length += normalize_tail(slash, end - at, out + length, has_stray_percent(slash, end - at));
    } else {
        memcpy(out + length, s + at, end - at);
        length += end - at;
    }
    PyObject *result = PyUnicode_DecodeUTF8((const char *)out, (Py_ssize_t)length, NULL);
    if (out != stack) PyMem_Free(out);
    return result;
}

/* UTF-8 of a str, or NULL with no error set for a str that has none (lone surrogates). */
static const char *utf8_of(PyObject *text, Py_ssize_t *size, int *failed) {
    const char *raw = PyUnicode_AsUTF8AndSize(text, size);
    if (raw == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            PyErr_Clear();
        } else {
            *failed = 1;
        }
    }
    return raw;
}

/* Canonical URL of url (joined to base[0:base_size] unless base is NULL): str, None or NULL. */
static PyObject *ada_canonical(PyObject *url, const char *base, Py_ssize_t base_size) {
    Py_ssize_t size;
    int failed = 0;
    const char *raw = utf8_of(url, &size, &failed);
    if (raw == NULL) {
        if (failed) return NULL;
        Py_RETURN_NONE;
    }
    ada_url parsed = base == NULL ? ada_parse_fn(raw, (size_t)size)
                                  : ada_parse_with_base_fn(raw, (size_t)size, base, (size_t)base_size);
    PyObject *result;
    if (ada_is_valid_fn(parsed)) {
        ada_string href = ada_get_href_fn(parsed);
        result = finish(href.data, href.length);
    } else {
        result = Py_NewRef(Py_None);
    }
    ada_free_fn(parsed);
    return result;
}

static int check_bound(void) {
    if (ada_parse_fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "webgather._urlcore: bind() was not called");
        return 0;
    }
    return 1;
}

/* resolve_link(base, href), then canonicalize(href) if that gave None (as _resolve_all). */
static PyObject *resolve_or_absolute(const char *base, Py_ssize_t base_size, PyObject *href) {
    PyObject *target = base == NULL ? Py_NewRef(Py_None) : ada_canonical(href, base, base_size);
    if (target != Py_None) return target;
    Py_DECREF(target);
    return ada_canonical(href, NULL, 0);
}

static PyObject *base_utf8(PyObject *base, const char **raw, Py_ssize_t *size) {
    int failed = 0;
    *raw = utf8_of(base, size, &failed);
    return failed ? NULL : Py_None;  /* borrowed marker: NULL means a real error */
}

static PyObject *py_bind(PyObject *self, PyObject *args) {
    unsigned long long parse, parse_with_base, is_valid, get_href, free_fn;
    if (!PyArg_ParseTuple(args, "KKKKK:bind", &parse, &parse_with_base, &is_valid, &get_href,
                          &free_fn))
        return NULL;
    if (!parse || !parse_with_base || !is_valid || !get_href || !free_fn) {
        PyErr_SetString(PyExc_ValueError, "webgather._urlcore.bind: a null function address");
        return NULL;
    }
    ada_parse_fn = (ada_url(*)(const char *, size_t))(uintptr_t)parse;
    ada_parse_with_base_fn =
        (ada_url(*)(const char *, size_t, const char *, size_t))(uintptr_t)parse_with_base;
    ada_is_valid_fn = (bool (*)(ada_url))(uintptr_t)is_valid;
    ada_get_href_fn = (ada_string(*)(ada_url))(uintptr_t)get_href;
    ada_free_fn = (void (*)(ada_url))(uintptr_t)free_fn;
    Py_RETURN_NONE;
}

static PyObject *py_resolve_link(PyObject *self, PyObject *args) {
    PyObject *base, *href;
    const char *raw;
    Py_ssize_t size;
    if (!check_bound() || !PyArg_ParseTuple(args, "UU:resolve_link", &base, &href)) return NULL;
    if (base_utf8(base, &raw, &size) == NULL) return NULL;
    if (raw == NULL) Py_RETURN_NONE;
    return ada_canonical(href, raw, size);
}

static PyObject *py_canonicalize(PyObject *self, PyObject *args) {
    PyObject *url;
    if (!check_bound() || !PyArg_ParseTuple(args, "U:canonicalize", &url)) return NULL;
    return ada_canonical(url, NULL, 0);
}

/* A new instance of the tuple subclass link_type holding (url, item[1], item[2], item[3]). */
static PyObject *make_link(PyTypeObject *link_type, PyObject *url, PyObject *item) {
    PyObject *link = link_type->tp_alloc(link_type, 4);
    if (link == NULL) return NULL;
    PyTuple_SET_ITEM(link, 0, Py_NewRef(url));
    for (Py_ssize_t i = 1; i < 4; i++) PyTuple_SET_ITEM(link, i, Py_NewRef(PyTuple_GET_ITEM(item, i)));
    return link;
}

/* The target of href: from the page's cache, else resolved and cached. Borrowed, or NULL. */
static PyObject *cached_target(PyObject *cache, const char *base, Py_ssize_t base_size,
                               PyObject *href) {
    PyObject *target = PyDict_GetItemWithError(cache, href);
    if (target != NULL || PyErr_Occurred()) return target;
    target = resolve_or_absolute(base, base_size, href);
    if (target == NULL) return NULL;
    int stored = PyDict_SetItem(cache, href, target);
    Py_DECREF(target);  /* the cache holds it */
    return stored < 0 ? NULL : target;
}

static int append_links(PyObject *out, PyObject *raws, PyTypeObject *link_type, const char *base,
                        Py_ssize_t base_size) {
    PyObject *cache = PyDict_New();
    if (cache == NULL) return -1;
    Py_ssize_t count = PyList_GET_SIZE(raws);
    int status = 0;
    for (Py_ssize_t i = 0; i < count && status == 0; i++) {
        PyObject *item = PyList_GET_ITEM(raws, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 4 ||
            !PyUnicode_Check(PyTuple_GET_ITEM(item, 0))) {
            PyErr_SetString(PyExc_TypeError, "resolve_all: raws must hold (href: str, anchor, nofollow, tag)");
            status = -1;
            break;
        }
        Py_INCREF(item);  /* a list item may go away under us: keep it while we use it */
        PyObject *target = cached_target(cache, base, base_size, PyTuple_GET_ITEM(item, 0));
        if (target == NULL) {
            status = -1;
        } else if (target != Py_None) {
            PyObject *link = make_link(link_type, target, item);
            status = link == NULL ? -1 : PyList_Append(out, link);
            Py_XDECREF(link);
        }
        Py_DECREF(item);
    }
    Py_DECREF(cache);
    return status;
}

static PyObject *py_resolve_all(PyObject *self, PyObject *args) {
    PyObject *base, *raws;
    PyTypeObject *link_type;
    const char *raw;
    Py_ssize_t size;
    if (!check_bound() ||
        !PyArg_ParseTuple(args, "UO!O!:resolve_all", &base, &PyList_Type, &raws, &PyType_Type,
                          &link_type))
        return NULL;
    if (!PyType_IsSubtype(link_type, &PyTuple_Type) ||
        link_type->tp_basicsize != PyTuple_Type.tp_basicsize) {
        PyErr_SetString(PyExc_TypeError, "resolve_all: link_type must be a plain tuple subclass");
        return NULL;
    }
    if (base_utf8(base, &raw, &size) == NULL) return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    if (append_links(out, raws, link_type, raw, size) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    PyObject *links = PyList_AsTuple(out);
    Py_DECREF(out);
    return links;
}

static PyMethodDef methods[] = {
    {"bind", py_bind, METH_VARARGS,
     "bind(ada_parse, ada_parse_with_base, ada_is_valid, ada_get_href, ada_free): addresses of "
     "ada's C API functions (from ada_url's cffi module)."},
    {"resolve_link", py_resolve_link, METH_VARARGS,
     "resolve_link(base, href) -> canonical URL or None (as webgather.urls.resolve_link)."},
    {"canonicalize", py_canonicalize, METH_VARARGS,
     "canonicalize(url) -> canonical URL or None (as webgather.urls.canonicalize)."},
    {"resolve_all", py_resolve_all, METH_VARARGS,
     "resolve_all(base, raws, link_type) -> tuple of link_type(url, anchor, nofollow, tag) "
     "(as webgather.parse.links._resolve_all)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "webgather._urlcore",
    "A page's links joined and canonicalized in one C call (see webgather.parse.native).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__urlcore(void) { return PyModule_Create(&module); }
