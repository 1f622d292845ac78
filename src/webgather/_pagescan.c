/* webgather._pagescan: the elements of a parsed page that matter to a crawl, in one C walk.
 *
 * The native twin of webgather.parse.links._Scan (which reads the nodes of one CSS
 * selection through selectolax's Python API); that Python code stays the reference and
 * the fallback, and tests compare the two. The tree is the lexbor document inside a
 * selectolax LexborHTMLParser (no second parse); lexbor's functions come from the
 * already-loaded selectolax extension by dlopen(RTLD_NOLOAD) + dlsym. bind() checks the
 * object layout this file assumes against a live parser before any scan (see
 * webgather.parse.native). String rules (lower, split, strip) are Python's own, called
 * through the C API, so Unicode whitespace is treated exactly as the reference does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

typedef void node_t;
typedef int (*walker_f)(node_t *node, void *ctx);

static void (*simple_walk)(node_t *, walker_f, void *);
static unsigned (*node_type)(node_t *);
static const unsigned char *(*local_name)(node_t *, size_t *);
static bool (*has_attribute)(node_t *, const unsigned char *, size_t);
static const unsigned char *(*get_attribute)(node_t *, const unsigned char *, size_t, size_t *);
static unsigned char *(*text_content)(node_t *, size_t *);
static void *(*destroy_text)(void *, unsigned char *);

enum { ACTION_OK = 0, ACTION_STOP = 1, NODE_ELEMENT = 1, NODE_TEXT = 3, NODE_DOCUMENT = 9 };

/* The LexborHTMLParser object as selectolax 0.4-1.0 lays it out (checked by bind()). */
typedef struct {
    PyObject_HEAD
    void *vtab;
    void *document;
    void *fragment_wrapper;
    int is_fragment;
    uintptr_t fragment_tag_id;
    uintptr_t fragment_namespace_id;
    PyObject *raw_html;
} parser_object;

static PyTypeObject *parser_type;

static int name_is(node_t *element, const char *name) {
    size_t length = 0;
    const unsigned char *found = local_name(element, &length);
    return found != NULL && length == strlen(name) && memcmp(found, name, length) == 0;
}

static int has_attr(node_t *element, const char *name) {
    return has_attribute(element, (const unsigned char *)name, strlen(name));
}

/* The attribute as str ("" when present without value), None when absent, NULL on error. */
static PyObject *attr(node_t *element, const char *name) {
    if (!has_attr(element, name)) Py_RETURN_NONE;
    size_t length = 0;
    const unsigned char *value = get_attribute(element, (const unsigned char *)name, strlen(name), &length);
    if (value == NULL || length == 0) return PyUnicode_FromStringAndSize("", 0);
    return PyUnicode_DecodeUTF8((const char *)value, (Py_ssize_t)length, "replace");
}

/* Text of every text node under a node, each decoded on its own (as selectolax's text()). */
typedef struct {
    PyObject *pieces;
    void *document;
    int failed;
} text_walk;

static int collect_text(node_t *node, void *ctx) {
    text_walk *walk = ctx;
    if (node_type(node) != NODE_TEXT) return ACTION_OK;
    size_t length = 0;
    unsigned char *data = text_content(node, &length);
    if (data == NULL) return ACTION_OK;
    PyObject *piece = PyUnicode_DecodeUTF8((const char *)data, (Py_ssize_t)length, "replace");
    destroy_text(walk->document, data);
    if (piece == NULL || PyList_Append(walk->pieces, piece) < 0) {
        Py_XDECREF(piece);
        walk->failed = 1;
        return ACTION_STOP;
    }
    Py_DECREF(piece);
    return ACTION_OK;
}

/* " ".join(text.split())[:limit], stealing text. */
static PyObject *collapse(PyObject *text, Py_ssize_t limit) {
    if (text == NULL) return NULL;
    PyObject *words = PyUnicode_Split(text, NULL, -1);
    Py_DECREF(text);
    if (words == NULL) return NULL;
    PyObject *space = PyUnicode_FromString(" ");
    PyObject *joined = space == NULL ? NULL : PyUnicode_Join(space, words);
    Py_XDECREF(space);
    Py_DECREF(words);
    if (joined == NULL || PyUnicode_GET_LENGTH(joined) <= limit) return joined;
    PyObject *cut = PyUnicode_Substring(joined, 0, limit);
    Py_DECREF(joined);
    return cut;
}

/* node.text() of selectolax: its descendants' text, collapsed to limit characters. */
static PyObject *node_text(node_t *node, void *document, Py_ssize_t limit) {
    text_walk walk = {PyList_New(0), document, 0};
    if (walk.pieces == NULL) return NULL;
    simple_walk(node, collect_text, &walk);
    PyObject *empty = walk.failed ? NULL : PyUnicode_FromString("");
    PyObject *text = empty == NULL ? NULL : PyUnicode_Join(empty, walk.pieces);
    Py_XDECREF(empty);
    Py_DECREF(walk.pieces);
    return collapse(text, limit);
}

static int find_img_alt(node_t *node, void *ctx) {
    if (node_type(node) == NODE_ELEMENT && name_is(node, "img") && has_attr(node, "alt")) {
        *(node_t **)ctx = node;
        return ACTION_STOP;
    }
    return ACTION_OK;
}

/* The anchor of an <a>: its text, else the alt of the first <img alt> in it. */
static PyObject *anchor_of(node_t *node, void *document, Py_ssize_t limit) {
    PyObject *text = node_text(node, document, limit);
    if (text == NULL || PyUnicode_GET_LENGTH(text) > 0) return text;
    Py_DECREF(text);
    node_t *image = NULL;
    simple_walk(node, find_img_alt, &image);
    if (image == NULL) return PyUnicode_FromString("");
    return collapse(attr(image, "alt"), limit);
}

/* text.lower().split() (None -> []) as a new list, or NULL. */
static PyObject *lower_words(PyObject *text, int replace_commas) {
    if (text == Py_None) return PyList_New(0);
    PyObject *lower = PyObject_CallMethod(text, "lower", NULL);
    if (lower != NULL && replace_commas) {
        PyObject *spaced = PyObject_CallMethod(lower, "replace", "ss", ",", " ");
        Py_DECREF(lower);
        lower = spaced;
    }
    if (lower == NULL) return NULL;
    PyObject *words = PyUnicode_Split(lower, NULL, -1);
    Py_DECREF(lower);
    return words;
}

/* 1 when word is in list, 0 if not, -1 on error. */
static int has_word(PyObject *list, const char *word) {
    PyObject *key = PyUnicode_FromString(word);
    if (key == NULL) return -1;
    int found = PySequence_Contains(list, key);
    Py_DECREF(key);
    return found;
}

typedef struct {
    void *document;
    PyObject *raw;       /* list of (href, anchor, nofollow, tag) */
    PyObject *names;     /* the robots meta names obeyed (a tuple of lower-case str) */
    PyObject *base_href; /* NULL until found, then a str */
    PyObject *canonical_href;
    PyObject *title;
    int nofollow, noindex, truncated, failed;
    Py_ssize_t max_links, anchor_limit, title_limit;
} scan_state;

/* Append (href or "", anchor, nofollow, tag) to the raw links; steals href and anchor. */
static int add_raw(scan_state *scan, PyObject *href, PyObject *anchor, int nofollow, const char *tag) {
    if (href == NULL || anchor == NULL) {
        Py_XDECREF(href);
        Py_XDECREF(anchor);
        return -1;
    }
    if (href == Py_None) {
        Py_DECREF(href);
        href = PyUnicode_FromString("");
        if (href == NULL) {
            Py_DECREF(anchor);
            return -1;
        }
    }
    PyObject *item = Py_BuildValue("(NNNs)", href, anchor, PyBool_FromLong(nofollow), tag);
    if (item == NULL) return -1;
    int status = PyList_Append(scan->raw, item);
    Py_DECREF(item);
    return status;
}

/* The element's rel: 1 if it holds the nofollow token, 0 if not, -1 on error. */
static int rel_nofollow(node_t *element) {
    PyObject *rel = attr(element, "rel");
    if (rel == NULL) return -1;
    PyObject *words = lower_words(rel, 0);
    Py_DECREF(rel);
    if (words == NULL) return -1;
    int found = has_word(words, "nofollow");
    Py_DECREF(words);
    return found;
}

static int read_a(scan_state *scan, node_t *element) {
    int nofollow = rel_nofollow(element);
    if (nofollow < 0) return -1;
    return add_raw(scan, attr(element, "href"), anchor_of(element, scan->document, scan->anchor_limit),
                   nofollow, "a");
}

static int read_area(scan_state *scan, node_t *element) {
    PyObject *alt = attr(element, "alt");
    if (alt == Py_None) {
        Py_DECREF(alt);
        alt = PyUnicode_FromString("");
    }
    PyObject *anchor = collapse(alt, scan->anchor_limit);
    int nofollow = anchor == NULL ? -1 : rel_nofollow(element);
    if (nofollow < 0) {
        Py_XDECREF(anchor);
        return -1;
    }
    return add_raw(scan, attr(element, "href"), anchor, nofollow, "area");
}

/* <link href>: the first rel=canonical, and alternate/next/prev links unless stylesheet/icon. */
static int read_link(scan_state *scan, node_t *element) {
    PyObject *rel = attr(element, "rel");
    PyObject *rels = rel == NULL ? NULL : lower_words(rel, 0);
    Py_XDECREF(rel);
    if (rels == NULL) return -1;
    int canonical = has_word(rels, "canonical");
    int linked = (has_word(rels, "alternate") > 0 || has_word(rels, "next") > 0 || has_word(rels, "prev") > 0) &&
                 has_word(rels, "stylesheet") == 0 && has_word(rels, "icon") == 0;
    int nofollow = has_word(rels, "nofollow");
    Py_DECREF(rels);
    if (PyErr_Occurred()) return -1;
    if (canonical && scan->canonical_href == NULL) {
        PyObject *href = attr(element, "href");
        if (href == NULL) return -1;
        scan->canonical_href = href == Py_None ? PyUnicode_FromString("") : href;
        if (href == Py_None) Py_DECREF(href);
        if (scan->canonical_href == NULL) return -1;
    }
    if (!linked) return 0;
    return add_raw(scan, attr(element, "href"), PyUnicode_FromString(""), nofollow, "link");
}

static int read_meta(scan_state *scan, node_t *element) {
    PyObject *name = attr(element, "name");
    PyObject *stripped = name == NULL ? NULL : PyObject_CallMethod(name, "strip", NULL);
    Py_XDECREF(name);
    PyObject *lower = stripped == NULL ? NULL : PyObject_CallMethod(stripped, "lower", NULL);
    Py_XDECREF(stripped);
    if (lower == NULL) return -1;
    int obeyed = PySequence_Contains(scan->names, lower);
    Py_DECREF(lower);
    if (obeyed <= 0) return obeyed;
    PyObject *content = attr(element, "content");
    PyObject *tokens = content == NULL ? NULL : lower_words(content, 1);
    Py_XDECREF(content);
    if (tokens == NULL) return -1;
    int none = has_word(tokens, "none"), nofollow = has_word(tokens, "nofollow");
    int noindex = has_word(tokens, "noindex");
    Py_DECREF(tokens);
    if (PyErr_Occurred()) return -1;
    scan->nofollow = scan->nofollow || none || nofollow;
    scan->noindex = scan->noindex || none || noindex;
    return 0;
}

/* An element's lower-case local name, as a NUL-free (pointer, length) pair. */
typedef struct {
    const unsigned char *name;
    size_t length;
} tag_name;

static int tag_is(tag_name tag, const char *name) {
    return tag.length == strlen(name) && memcmp(tag.name, name, tag.length) == 0;
}

static int read_base(scan_state *scan, node_t *element) {
    if (scan->base_href != NULL || !has_attr(element, "href")) return 0;
    PyObject *href = attr(element, "href");
    scan->base_href = href == Py_None ? PyUnicode_FromString("") : href;
    if (href == Py_None) Py_DECREF(href);
    return scan->base_href == NULL ? -1 : 0;
}

/* One selected element (a[href], area[href], link[href], frame[src], iframe[src], base[href],
 * meta[name], title): 0 when read or not one of them, -1 on error. Names of 1-6 letters only. */
static int read_element(scan_state *scan, node_t *element) {
    tag_name tag = {NULL, 0};
    tag.name = local_name(element, &tag.length);
    if (tag.name == NULL || tag.length == 0 || tag.length > 6) return 0;
    if (tag_is(tag, "a")) return has_attr(element, "href") ? read_a(scan, element) : 0;
    if (tag_is(tag, "link")) return has_attr(element, "href") ? read_link(scan, element) : 0;
    if (tag_is(tag, "area")) return has_attr(element, "href") ? read_area(scan, element) : 0;
    if (tag_is(tag, "iframe") || tag_is(tag, "frame")) {
        if (!has_attr(element, "src")) return 0;
        return add_raw(scan, attr(element, "src"), PyUnicode_FromString(""), 0,
                       tag_is(tag, "frame") ? "frame" : "iframe");
    }
    if (tag_is(tag, "base")) return read_base(scan, element);
    if (tag_is(tag, "meta")) return has_attr(element, "name") ? read_meta(scan, element) : 0;
    if (tag_is(tag, "title") && scan->title == NULL) {
        scan->title = node_text(element, scan->document, scan->title_limit);
        return scan->title == NULL ? -1 : 0;
    }
    return 0;
}

static int scan_node(node_t *node, void *ctx) {
    scan_state *scan = ctx;
    if (node_type(node) != NODE_ELEMENT) return ACTION_OK;
    if (read_element(scan, node) < 0) {
        scan->failed = 1;
        return ACTION_STOP;
    }
    if (PyList_GET_SIZE(scan->raw) > scan->max_links) {
        scan->truncated = 1;
        if (PyList_SetSlice(scan->raw, scan->max_links, PyList_GET_SIZE(scan->raw), NULL) < 0)
            scan->failed = 1;
        return ACTION_STOP;
    }
    return ACTION_OK;
}

static PyObject *or_none(PyObject *value) { return value == NULL ? Py_NewRef(Py_None) : value; }

static PyObject *py_scan(PyObject *self, PyObject *args) {
    PyObject *tree, *names;
    scan_state scan = {0};
    if (!PyArg_ParseTuple(args, "OO!nnn:scan", &tree, &PyTuple_Type, &names, &scan.max_links,
                          &scan.anchor_limit, &scan.title_limit))
        return NULL;
    if (parser_type == NULL || Py_TYPE(tree) != parser_type) {
        PyErr_SetString(PyExc_TypeError, "scan: a LexborHTMLParser (of the selectolax bind() checked)");
        return NULL;
    }
    scan.document = ((parser_object *)tree)->document;
    if (scan.document == NULL || scan.max_links < 0) {
        PyErr_SetString(PyExc_ValueError, "scan: no document, or max_links < 0");
        return NULL;
    }
    scan.names = names;
    scan.raw = PyList_New(0);
    if (scan.raw == NULL) return NULL;
    simple_walk(scan.document, scan_node, &scan);
    if (scan.failed) {
        Py_DECREF(scan.raw);
        Py_XDECREF(scan.base_href);
        Py_XDECREF(scan.canonical_href);
        Py_XDECREF(scan.title);
        return NULL;
    }
    return Py_BuildValue("(NNNNNNN)", scan.raw, or_none(scan.base_href), or_none(scan.canonical_href),
                         or_none(scan.title), PyBool_FromLong(scan.nofollow), PyBool_FromLong(scan.noindex),
                         PyBool_FromLong(scan.truncated));
}

static void *symbol(void *library, const char *name, int *missing) {
    void *found = dlsym(library, name);
    if (found == NULL) *missing = 1;
    return found;
}

static int bind_symbols(const char *path) {
    void *library = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (library == NULL) {
        PyErr_Format(PyExc_ImportError, "webgather._pagescan: %s is not loaded", path);
        return -1;
    }
    int missing = 0;
    *(void **)&simple_walk = symbol(library, "lxb_dom_node_simple_walk", &missing);
    *(void **)&node_type = symbol(library, "lxb_dom_node_type_noi", &missing);
    *(void **)&local_name = symbol(library, "lxb_dom_element_local_name", &missing);
    *(void **)&has_attribute = symbol(library, "lxb_dom_element_has_attribute", &missing);
    *(void **)&get_attribute = symbol(library, "lxb_dom_element_get_attribute", &missing);
    *(void **)&text_content = symbol(library, "lxb_dom_node_text_content", &missing);
    *(void **)&destroy_text = symbol(library, "lxb_dom_document_destroy_text_noi", &missing);
    dlclose(library);  /* RTLD_NOLOAD took a reference of its own: selectolax keeps it loaded */
    if (missing) {
        simple_walk = NULL;
        PyErr_SetString(PyExc_ImportError, "webgather._pagescan: a lexbor function is not exported");
        return -1;
    }
    return 0;
}

/* bind(path of selectolax's lexbor module, a LexborHTMLParser, its raw_html). */
static PyObject *py_bind(PyObject *self, PyObject *args) {
    const char *path;
    PyObject *sample, *raw_html;
    if (!PyArg_ParseTuple(args, "sOO:bind", &path, &sample, &raw_html)) return NULL;
    parser_type = NULL;
    if (bind_symbols(path) < 0) return NULL;
    parser_object *parser = (parser_object *)sample;
    if (Py_TYPE(sample)->tp_basicsize < (Py_ssize_t)sizeof(parser_object) || parser->raw_html != raw_html ||
        parser->document == NULL || node_type(parser->document) != NODE_DOCUMENT) {
        PyErr_SetString(PyExc_ImportError, "webgather._pagescan: LexborHTMLParser is not laid out as expected");
        return NULL;
    }
    parser_type = (PyTypeObject *)Py_NewRef(Py_TYPE(sample));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"bind", py_bind, METH_VARARGS,
     "bind(lexbor_module_path, sample_parser, sample_parser.raw_html): find lexbor's functions, check "
     "the parser's layout."},
    {"scan", py_scan, METH_VARARGS,
     "scan(tree, robots_meta_names, max_links, anchor_chars, title_chars) -> (raw links, base href, "
     "canonical href, title, meta nofollow, meta noindex, truncated), as webgather.parse.links._Scan."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "webgather._pagescan",
    "The elements of a parsed page that matter to a crawl, in one C walk (see webgather.parse.native).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__pagescan(void) { return PyModule_Create(&module); }
