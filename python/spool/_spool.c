/*
 * _spool: libspool for Python, the calls of the job cycle over
 * libspool.so.0.  The typed layer, spool/__init__.py, is what programs
 * import; this module only moves values between Python and lib/spool.h.
 *
 * Invariant: every call that may wait for a lock or a sync runs with the
 * GIL released, and no Python object is touched while it is; the layer
 * above holds a handle's lock around each call (lib/spool.h, "Threads").
 * Results come back as tuples, one an item, in the order given.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>


#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spool.h"
#include "common.h"
#include "stat.h"

typedef struct {
	PyObject_HEAD
	struct spool *sp;
} Handle;

static PyTypeObject HandleType;

/* OSError with errno err, text and the file or ID it is about. */
static PyObject *
raise_os_error(int err, const char *text, const char *what)
{
	PyObject *args, *exc;

	args = Py_BuildValue("(iss)", err, text, what);
	if (args == NULL)
		return NULL;
	exc = PyObject_Call(PyExc_OSError, args, NULL);
	Py_DECREF(args);
	if (exc != NULL) {
		PyErr_SetObject(PyExc_OSError, exc);
		Py_DECREF(exc);
	}
	return NULL;
}

/* OSError with errno set and the library's words for it, if it has any. */
static PyObject *
os_error(int err, int when, const char *what)
{
	const struct spool_error *e = spool_error(err, when);

	return raise_os_error(err, e->text != NULL ? e->text : strerror(err),
	    what);
}

/*
 * A malformed config, as the commands say it: the line, the key, what was
 * given and the form expected.
 */
static PyObject *
config_error(const char *dir)
{
	char why[256], text[300], where[4200];
	int line;

	Py_BEGIN_ALLOW_THREADS
	line = spool_config_error(dir, why, sizeof(why));
	Py_END_ALLOW_THREADS
	if (line <= 0)
		return os_error(EBADMSG, SPOOL_AT_OPEN, dir);
	(void)snprintf(text, sizeof(text), "%s (see spool(7), FILES)", why);
	(void)snprintf(where, sizeof(where), "%s/config:%d", dir, line);
	return raise_os_error(EBADMSG, text, where);
}

/*
 * A file system refused in multi-host mode, as the commands say it: the
 * mount, the option at fault and the rule it breaks.
 */
static PyObject *
fs_error(const char *dir)
{
	char why[256], text[320];
	int r;

	Py_BEGIN_ALLOW_THREADS
	r = spool_fs_error(dir, why, sizeof(why));
	Py_END_ALLOW_THREADS
	if (r != 1)
		return os_error(ENOLCK, SPOOL_AT_OPEN, dir);
	(void)snprintf(text, sizeof(text), "multi-host mode on %s (see "
	    "spool-layout.md, File systems)", why);
	return raise_os_error(ENOLCK, text, dir);
}

static struct spool *
handle_of(Handle *h)
{
	if (h->sp == NULL)
		PyErr_SetString(PyExc_ValueError, "the spool is closed");
	return h->sp;
}

/*
 * (status, refusal, errno, changed, state, token, reason, text) of the item
 * of ID id.  text: the line a command prints for it, None for one done.
 */
static PyObject *
result(const char *id, const struct spool_result *r)
{
	char text[SPOOL_ID_MAX * 2 + 512];

	if (spool_result_text(id, r, text, sizeof(text)) == 0)
		return Py_BuildValue("(iiiiiKiO)", r->status, r->refusal,
		    r->err, r->changed, (int)r->state,
		    (unsigned long long)r->token, r->reason, Py_None);
	return Py_BuildValue("(iiiiiKis)", r->status, r->refusal, r->err,
	    r->changed, (int)r->state, (unsigned long long)r->token,
	    r->reason, text);
}

static PyObject *
mod_open(PyObject *self, PyObject *args)
{
	const char *dir;
	struct spool *sp;
	Handle *h;
	int err;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &dir))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	sp = spool_open(dir);
	err = errno;
	Py_END_ALLOW_THREADS
	if (sp == NULL && err == EBADMSG)
		return config_error(dir);
	if (sp == NULL && err == ENOLCK)
		return fs_error(dir);
	if (sp == NULL)
		return os_error(err, SPOOL_AT_OPEN, dir);
	if ((h = PyObject_New(Handle, &HandleType)) == NULL) {
		spool_close(sp);
		return NULL;
	}
	h->sp = sp;
	return (PyObject *)h;
}

static PyObject *
mod_init(PyObject *self, PyObject *args)
{
	const char *dir, *group = NULL;
	int r, err;

	(void)self;
	if (!PyArg_ParseTuple(args, "s|z", &dir, &group))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	r = spool_init(dir, group);
	err = errno;
	Py_END_ALLOW_THREADS
	if (r == -1)
		return os_error(err, SPOOL_AT_INIT, err == ESRCH && group !=
		    NULL ? group : dir);
	Py_RETURN_NONE;
}

/* (status, text) of errno err from where when says: spool.h, "Errors". */
static PyObject *
mod_error(PyObject *self, PyObject *args)
{
	const struct spool_error *e;
	int err, when;

	(void)self;
	if (!PyArg_ParseTuple(args, "ii", &err, &when))
		return NULL;
	e = spool_error(err, when);
	return Py_BuildValue("(iz)", e->status, e->text);
}

static PyObject *
mod_name(PyObject *self, PyObject *args)
{
	const char *kind, *s = NULL;
	int v;

	(void)self;
	if (!PyArg_ParseTuple(args, "si", &kind, &v))
		return NULL;
	if (strcmp(kind, "class") == 0)
		s = spool_class_name(v);
	else if (strcmp(kind, "refusal") == 0)
		s = spool_refusal_name(v);
	else if (strcmp(kind, "state") == 0)
		s = spool_state_name(v);
	else if (strcmp(kind, "outcome") == 0)
		s = spool_outcome_name(v);
	else if (strcmp(kind, "reason") == 0)
		s = spool_reason_name(v);
	if (s == NULL)
		Py_RETURN_NONE;
	return PyUnicode_FromString(s);
}

/* duration(ms): as spool-run writes one, "30s", "1h", "250ms". */
static PyObject *
mod_duration(PyObject *self, PyObject *args)
{
	long long ms;
	char buf[32];

	(void)self;
	if (!PyArg_ParseTuple(args, "L", &ms))
		return NULL;
	return PyUnicode_FromString(fmt_duration(buf, sizeof(buf), ms));
}

/*
 * watch(dir): an inotify descriptor that becomes readable when a line is
 * appended under dir/audit/, as spool-run(1) waits (its "Waiting").  The
 * caller polls it, reads it empty and closes it.
 */
static PyObject *
mod_watch(PyObject *self, PyObject *args)
{
	const char *dir;
	PyObject *r;
	int fd;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &dir))
		return NULL;
	if ((fd = audit_watch(dir)) == -1)
		return PyErr_SetFromErrnoWithFilename(PyExc_OSError, dir);
	if ((r = PyLong_FromLong(fd)) == NULL)
		(void)close(fd);	/* not yet used */
	return r;
}

/* valid(kind, s): whether s is a valid id, key, owner or note. */
static PyObject *
mod_valid(PyObject *self, PyObject *args)
{
	const char *kind, *s;
	int v = 0;

	(void)self;
	if (!PyArg_ParseTuple(args, "ss", &kind, &s))
		return NULL;
	if (strcmp(kind, "id") == 0)
		v = spool_valid_id(s);
	else if (strcmp(kind, "key") == 0)
		v = spool_valid_key(s);
	else if (strcmp(kind, "owner") == 0)
		v = spool_valid_owner(s);
	else if (strcmp(kind, "note") == 0)
		v = spool_valid_note(s);
	return PyBool_FromLong(v);
}

static PyObject *
mod_class_from_name(PyObject *self, PyObject *args)
{
	const char *s;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &s))
		return NULL;
	return PyLong_FromLong(spool_class_from_name(s));
}

static PyObject *
h_close(Handle *h, PyObject *unused)
{
	struct spool *sp = h->sp;

	(void)unused;
	h->sp = NULL;
	if (sp != NULL) {
		Py_BEGIN_ALLOW_THREADS
		spool_close(sp);
		Py_END_ALLOW_THREADS
	}
	Py_RETURN_NONE;
}

/*
 * enqueue([(fd, id, key, trace, max_attempts, deadline_ms, delay_ms)]):
 * one call, one wait; [(id, result)].  id None: one is made.
 */
static PyObject *
h_enqueue(Handle *h, PyObject *args)
{
	struct spool *sp;
	struct spool_job *jobs = NULL;
	PyObject *list, *items, *out = NULL, *it, *r;
	Py_ssize_t n, i;
	int rv, err;

	if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &list) ||
	    (sp = handle_of(h)) == NULL)
		return NULL;
	/* A tuple of its own: no other thread can free the strings' bytes. */
	if ((items = PySequence_Tuple(list)) == NULL)
		return NULL;
	n = PyTuple_GET_SIZE(items);
	if ((jobs = calloc((size_t)n + 1, sizeof(*jobs))) == NULL) {
		Py_DECREF(items);
		return PyErr_NoMemory();
	}
	for (i = 0; i < n; i++) {
		struct spool_job *j = &jobs[i];
		long long deadline, delay;

		it = PyTuple_GET_ITEM(items, i);
		if (!PyArg_ParseTuple(it, "izzziLL", &j->fd, &j->id, &j->key,
		    &j->trace, &j->max_attempts, &deadline, &delay))
			goto done;
		j->deadline_ms = deadline;
		j->delay_ms = delay;
	}
	Py_BEGIN_ALLOW_THREADS
	rv = spool_enqueue(sp, jobs, (size_t)n);
	err = errno;
	Py_END_ALLOW_THREADS
	if (rv == -1 && err == EDQUOT) {
		/* The reserve, in spool-enqueue's words and figures. */
		char why[256];

		raise_os_error(err, reserve_text(sp, why, sizeof(why)),
		    "enqueue");
		goto done;
	}
	if (rv == -1) {
		os_error(err, SPOOL_AT_CALL, "enqueue");
		goto done;
	}
	if ((out = PyList_New(n)) == NULL)
		goto done;
	for (i = 0; i < n; i++) {
		if ((r = result(jobs[i].idbuf, &jobs[i].res)) == NULL ||
		    (r = Py_BuildValue("(sN)", jobs[i].idbuf, r)) == NULL) {
			Py_CLEAR(out);
			goto done;
		}
		PyList_SET_ITEM(out, i, r);
	}
done:
	free(jobs);
	Py_DECREF(items);
	return out;
}

/*
 * [(id, token, attempt, cycle, lease_until, trace, path)] of the n leases
 * in l, which it frees.  The leases are taken: a tuple that cannot be made
 * leaves them to run out.  The path is the file system's bytes, not
 * UTF-8's.
 */
static PyObject *
leases(struct spool_lease *l, size_t n)
{
	PyObject *out;
	size_t i;

	if ((out = PyList_New((Py_ssize_t)n)) != NULL)
		for (i = 0; i < n; i++) {
			PyObject *t = Py_BuildValue("(sKiiLsN)", l[i].id,
			    (unsigned long long)l[i].token, l[i].attempt,
			    l[i].cycle, (long long)l[i].lease_until, l[i].trace,
			    PyUnicode_DecodeFSDefault(l[i].path));

			if (t == NULL) {
				Py_CLEAR(out);
				break;
			}
			PyList_SET_ITEM(out, (Py_ssize_t)i, t);
		}
	spool_free_leases(l, n);
	return out;
}

/*
 * The finishes of list, [(id, token, outcome, class, detail, delay_ms)], in
 * a new array of *n; NULL with an exception set.  The strings are those of
 * *items, a copy of list that the caller keeps until the call is made and
 * then lets go: the list may change while the GIL is released.
 */
static struct spool_finish *
finishes(PyObject *list, PyObject **items, Py_ssize_t *n)
{
	struct spool_finish *f;
	Py_ssize_t i;

	if ((*items = PySequence_Tuple(list)) == NULL)
		return NULL;
	*n = PyTuple_GET_SIZE(*items);
	if ((f = calloc((size_t)*n + 1, sizeof(*f))) == NULL) {
		Py_CLEAR(*items);
		return (struct spool_finish *)PyErr_NoMemory();
	}
	for (i = 0; i < *n; i++) {
		unsigned long long tok;
		long long delay;
		int outcome, class;

		if (!PyArg_ParseTuple(PyTuple_GET_ITEM(*items, i), "sKiizL",
		    &f[i].id, &tok, &outcome, &class, &f[i].detail, &delay)) {
			free(f);
			Py_CLEAR(*items);
			return NULL;
		}
		f[i].token = tok;
		f[i].outcome = (enum spool_outcome)outcome;
		f[i].class = (enum spool_class)class;
		f[i].delay_ms = delay;
	}
	return f;
}

/*
 * [result] of n items, stride bytes apart from a, each a struct with a
 * const char *id and a struct spool_result res: a spool_finish or a
 * spool_item.
 */
#define RESULTS(a, n)	results((a), sizeof(*(a)), \
    offsetof(__typeof__(*(a)), id), offsetof(__typeof__(*(a)), res), (n))

static PyObject *
results(const void *a, size_t stride, size_t idoff, size_t resoff,
    Py_ssize_t n)
{
	const char *item;
	PyObject *out, *r;
	Py_ssize_t i;

	if ((out = PyList_New(n)) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		item = (const char *)a + (size_t)i * stride;
		if ((r = result(*(const char *const *)(const void *)(item +
		    idoff), (const void *)(item + resoff))) == NULL) {
			Py_DECREF(out);
			return NULL;
		}
		PyList_SET_ITEM(out, i, r);
	}
	return out;
}

/*
 * claim(n, lease_ms, owner): [(id, token, attempt, cycle, lease_until,
 * trace, path)], empty when nothing is due or the spool is paused.
 */
static PyObject *
h_claim(Handle *h, PyObject *args)
{
	struct spool_claim_opts o = { 0 };
	struct spool_lease *l;
	struct spool *sp;
	PyObject *out;
	Py_ssize_t max;
	long long lease;
	size_t n = 0;
	int rv, err;

	if (!PyArg_ParseTuple(args, "nLz", &max, &lease, &o.owner) ||
	    (sp = handle_of(h)) == NULL)
		return NULL;
	if (max < 1 || max > SPOOL_BATCH_MAX)
		return PyErr_Format(PyExc_ValueError, "n: bad number %zd "
		    "(1 to %d)", max, SPOOL_BATCH_MAX);
	o.lease_ms = lease;
	if ((l = calloc((size_t)max, sizeof(*l))) == NULL)
		return PyErr_NoMemory();
	Py_BEGIN_ALLOW_THREADS
	rv = spool_claim(sp, &o, l, (size_t)max, &n);
	err = errno;
	Py_END_ALLOW_THREADS
	if (rv == -1) {
		free(l);
		return os_error(err, SPOOL_AT_CALL, "claim");
	}
	out = leases(l, n);
	free(l);
	return out;
}

/*
 * finish([(id, token, outcome, class, detail, delay_ms)]): one call, one
 * wait; [result].
 */
static PyObject *
h_finish(Handle *h, PyObject *args)
{
	struct spool_finish *f;
	struct spool *sp;
	PyObject *list, *items, *out;
	Py_ssize_t n;
	int rv, err;

	if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &list) ||
	    (sp = handle_of(h)) == NULL ||
	    (f = finishes(list, &items, &n)) == NULL)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rv = spool_finish(sp, f, (size_t)n);
	err = errno;
	Py_END_ALLOW_THREADS
	out = rv == -1 ? os_error(err, SPOOL_AT_CALL, "finish") :
	    RESULTS(f, n);
	free(f);
	Py_DECREF(items);
	return out;
}

/*
 * finish_claim([(id, token, outcome, class, detail, delay_ms)], max,
 * lease_ms, owner): ([result], [lease], errno).  The finishes and a claim
 * of up to max jobs in one wait, as spool-run(1) makes them.  Each result
 * stands whatever the claim did; errno is the claim's failure, 0 if none.
 */
static PyObject *
h_finish_claim(Handle *h, PyObject *args)
{
	struct spool_claim_opts o = { 0 };
	struct spool_finish *f;
	struct spool_lease *l;
	struct spool *sp;
	PyObject *list, *items, *res, *got = NULL;
	Py_ssize_t n, max;
	long long lease;
	size_t ngot = 0;
	int rv, err = 0;

	if (!PyArg_ParseTuple(args, "O!nLz", &PyList_Type, &list, &max,
	    &lease, &o.owner) || (sp = handle_of(h)) == NULL)
		return NULL;
	if (max < 1 || max > SPOOL_BATCH_MAX)
		return PyErr_Format(PyExc_ValueError, "n: bad number %zd "
		    "(1 to %d)", max, SPOOL_BATCH_MAX);
	o.lease_ms = lease;
	if ((f = finishes(list, &items, &n)) == NULL)
		return NULL;
	if ((l = calloc((size_t)max, sizeof(*l))) == NULL) {
		free(f);
		Py_DECREF(items);
		return PyErr_NoMemory();
	}
	Py_BEGIN_ALLOW_THREADS
	if ((rv = spool_finish_claim(sp, f, (size_t)n, &o, l, (size_t)max,
	    &ngot)) == -1)
		err = errno;
	Py_END_ALLOW_THREADS
	/* Leases that cannot be handed up are left to run out. */
	if ((res = RESULTS(f, n)) != NULL)
		got = leases(l, rv == -1 ? 0 : ngot);
	else if (rv != -1)
		spool_free_leases(l, ngot);
	free(f);
	free(l);
	Py_DECREF(items);
	if (res == NULL || got == NULL) {
		Py_XDECREF(res);
		Py_XDECREF(got);
		return NULL;
	}
	return Py_BuildValue("(NNi)", res, got, err);
}

/*
 * stat(): what spool-stat --json prints, as bytes.  The counting runs
 * without the GIL; the JSON is written with it held, as json.c's state is
 * the process's.
 */
static PyObject *
h_stat(Handle *h, PyObject *unused)
{
	struct metric m[NMETRIC];
	struct stats *st;
	struct spool *sp;
	const char *what = "";
	PyObject *out = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r, err;

	(void)unused;
	if ((sp = handle_of(h)) == NULL)
		return NULL;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return PyErr_NoMemory();
	Py_BEGIN_ALLOW_THREADS
	r = stat_gather(sp, st, &what);
	err = errno;
	Py_END_ALLOW_THREADS
	if (r == -1) {
		free(st);
		return os_error(err, SPOOL_AT_CALL, what);
	}
	(void)stat_metrics(st, m);
	if ((f = open_memstream(&buf, &len)) == NULL) {
		free(st);
		return PyErr_NoMemory();
	}
	stat_json(f, st, m);
	if (fclose(f) == 0)
		out = PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
	else
		(void)PyErr_NoMemory();
	free(buf);
	free(st);
	return out;
}

/* settings(): (lease_ms, timeout_ms), the config's. */
static PyObject *
h_settings(Handle *h, PyObject *unused)
{
	struct spool_settings set;
	struct spool *sp;

	(void)unused;
	if ((sp = handle_of(h)) == NULL)
		return NULL;
	spool_settings(sp, &set);
	return Py_BuildValue("(LL)", (long long)set.lease_ms,
	    (long long)set.timeout_ms);
}

/*
 * operate(verb, by, note, reconciled, edited, from, [id]): [result].  verb
 * 0 redrive, 1 drop, 2 cancel, 3 purge from the state from; by and note
 * None give no operator (a purge of done/ only).  One call, one wait.
 */
static PyObject *
h_operate(Handle *h, PyObject *args)
{
	struct spool_operator op = { 0 };
	struct spool_item *items;
	struct spool *sp;
	PyObject *list, *ids, *out = NULL;
	Py_ssize_t n, i;
	int verb, from, rv = -1, err;

	if (!PyArg_ParseTuple(args, "izzppiO!", &verb, &op.by, &op.note,
	    &op.reconciled, &op.edited, &from, &PyList_Type, &list) ||
	    (sp = handle_of(h)) == NULL)
		return NULL;
	/* A tuple of its own: no other thread can free the IDs' bytes. */
	if ((ids = PySequence_Tuple(list)) == NULL)
		return NULL;
	n = PyTuple_GET_SIZE(ids);
	if ((items = calloc((size_t)n + 1, sizeof(*items))) == NULL) {
		Py_DECREF(ids);
		return PyErr_NoMemory();
	}
	for (i = 0; i < n; i++)
		if ((items[i].id = PyUnicode_AsUTF8(PyTuple_GET_ITEM(ids,
		    i))) == NULL)
			goto done;
	Py_BEGIN_ALLOW_THREADS
	switch (verb) {
	case 0:
		rv = spool_redrive(sp, &op, items, (size_t)n);
		break;
	case 1:
		rv = spool_drop(sp, &op, items, (size_t)n);
		break;
	case 2:
		rv = spool_cancel(sp, &op, items, (size_t)n);
		break;
	default:
		rv = spool_purge(sp, op.by != NULL ? &op : NULL,
		    (enum spool_state)from, items, (size_t)n);
	}
	err = errno;
	Py_END_ALLOW_THREADS
	out = rv == -1 ? os_error(err, SPOOL_AT_CALL, "operate") :
	    RESULTS(items, n);
done:
	free(items);
	Py_DECREF(ids);
	return out;
}

/* pause(on, by, note): None. */
static PyObject *
h_pause(Handle *h, PyObject *args)
{
	struct spool_operator op = { 0 };
	struct spool *sp;
	int on, rv, err;

	if (!PyArg_ParseTuple(args, "pzz", &on, &op.by, &op.note) ||
	    (sp = handle_of(h)) == NULL)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rv = spool_pause(sp, op.by != NULL ? &op : NULL, on);
	err = errno;
	Py_END_ALLOW_THREADS
	if (rv == -1)
		return os_error(err, SPOOL_AT_CALL, on ? "pause" : "resume");
	Py_RETURN_NONE;
}

/* A string of the audit line, or None for its "-". */
static PyObject *
field(const char *s)
{
	if (s == NULL || *s == '\0')
		Py_RETURN_NONE;
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/*
 * One line of spool_audit_scan, parsed, appended to the list arg as
 * (time_ms, event, id, token, attempt, cycle, actor, reason, class,
 * note, writer).  The scan runs with the GIL released; each line takes
 * it for the moment it is appended.  A line that does not parse is
 * skipped, as every reader skips it.
 */
static int
audit_line(void *arg, const char *line, size_t len)
{
	struct spool_audit a;
	PyGILState_STATE g;
	PyObject *t;
	int rv = 0;

	if (spool_audit_parse(line, len, &a) == -1)
		return 0;
	g = PyGILState_Ensure();
	t = Py_BuildValue("(LsNKiiNNNNs)", (long long)a.time,
	    spool_event_name(a.event), field(a.id),
	    (unsigned long long)a.token, a.attempt, a.cycle, field(a.actor),
	    field(a.reason != 0 ? spool_reason_name(a.reason) : NULL),
	    field(a.class != 0 ? spool_class_name(a.class) : NULL),
	    field(a.note), a.writer);
	if (t == NULL || PyList_Append((PyObject *)arg, t) == -1)
		rv = -1;	/* the exception stays set */
	Py_XDECREF(t);
	PyGILState_Release(g);
	return rv;
}

/* audit(): every audit line, parsed, in no set order. */
static PyObject *
h_audit(Handle *h, PyObject *unused)
{
	struct spool *sp;
	PyObject *out;
	int rv, err;

	(void)unused;
	if ((sp = handle_of(h)) == NULL || (out = PyList_New(0)) == NULL)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rv = spool_audit_scan(sp, audit_line, out);
	err = errno;
	Py_END_ALLOW_THREADS
	if (PyErr_Occurred()) {
		Py_DECREF(out);
		return NULL;
	}
	if (rv == -1) {
		Py_DECREF(out);
		return os_error(err, SPOOL_AT_CALL, "audit");
	}
	return out;
}

/* A name of the library's, or None for 0 (none). */
static PyObject *
name_or_none(const char *(*fn)(int), int v)
{
	return field(v != 0 ? fn(v) : NULL);
}

/*
 * What spool_job_info says of a job, as the tuple JobInfo takes, its
 * deliveries a list of tuples (cycle, attempt, token, owner, claimed_ms,
 * ended_ms, end, class, detail); with history unset, None.
 */
static PyObject *
info_tuple(const struct spool_job_info *in, int history)
{
	PyObject *dl = Py_None, *d;
	size_t i;

	if (history) {
		if ((dl = PyList_New(0)) == NULL)
			return NULL;
		for (i = 0; i < in->ndeliveries; i++) {
			const struct spool_delivery *v = &in->deliveries[i];

			d = Py_BuildValue("(iiKNLLNNN)", v->cycle, v->attempt,
			    (unsigned long long)v->token, field(v->owner),
			    (long long)v->claimed, (long long)v->ended,
			    field(v->end), name_or_none(spool_class_name,
			    v->class), field(v->detail));
			if (d == NULL || PyList_Append(dl, d) == -1) {
				Py_XDECREF(d);
				Py_DECREF(dl);
				return NULL;
			}
			Py_DECREF(d);
		}
	} else
		Py_INCREF(dl);
	return Py_BuildValue("(ssNLLLLLNNNKiiiNNNiiiNNLKKiiN)", in->id,
	    spool_state_name(in->state), field(in->file),
	    (long long)in->since, (long long)in->created,
	    (long long)in->deadline, (long long)in->eligible,
	    (long long)in->lease_until, field(in->trace), field(in->key),
	    field(in->owner), (unsigned long long)in->token, in->attempts,
	    in->max_attempts, in->cycles,
	    name_or_none(spool_reason_name, in->reason),
	    name_or_none(spool_class_name, in->class), field(in->detail),
	    in->side_effect, in->redriven, in->dropped, field(in->by),
	    field(in->note), (long long)in->acted,
	    (unsigned long long)in->payload_size,
	    (unsigned long long)in->payload_xxh3, in->payload_resized,
	    (int)in->damage, dl);
}

/*
 * show(id): the info tuple, with its deliveries; for a damaged job
 * (EUCLEAN), what its sidecar says, its damage set; None for no such job.
 */
static PyObject *
h_show(Handle *h, PyObject *args)
{
	struct spool_job_info in;
	struct spool *sp;
	const char *id;
	PyObject *t;
	int rv, err;

	if (!PyArg_ParseTuple(args, "s", &id) || (sp = handle_of(h)) == NULL)
		return NULL;
	memset(&in, 0, sizeof(in));
	Py_BEGIN_ALLOW_THREADS
	rv = spool_job_info(sp, id, 1, &in);
	err = errno;
	Py_END_ALLOW_THREADS
	if (rv == -1 && err == ENOENT) {
		spool_job_info_free(&in);
		Py_RETURN_NONE;
	}
	if (rv == -1 && err != EUCLEAN) {
		spool_job_info_free(&in);
		return os_error(err, SPOOL_AT_CALL, id);
	}
	t = info_tuple(&in, 1);
	spool_job_info_free(&in);
	return t;
}

struct listing {
	PyObject *out;
	enum spool_state state;
	int err;
	char id[SPOOL_ID_MAX + 1];
};

/*
 * One job of spool_list_jobs, appended under the GIL, as spool-ls lists
 * it: a job gone since the listing saw it is skipped, and so is a second
 * file of a job that is not where its record says, unless a hand moved
 * it there.  A job that cannot be read at all stops the listing.
 */
static int
list_job(void *arg, const char *id, const char *file,
    const struct spool_job_info *in)
{
	struct listing *l = arg;
	PyGILState_STATE g;
	PyObject *t;
	int rv = 0;

	if (in == NULL) {
		if (errno == ENOENT)
			return 0;
		l->err = errno;
		(void)snprintf(l->id, sizeof(l->id), "%s", id);
		return -1;
	}
	if (in->damage != SPOOL_DAMAGE_MISSING &&
	    (in->state != l->state || strcmp(in->file, file) != 0))
		return 0;
	g = PyGILState_Ensure();
	if ((t = info_tuple(in, 0)) == NULL || PyList_Append(l->out, t) == -1)
		rv = -1;
	Py_XDECREF(t);
	PyGILState_Release(g);
	return rv;
}

/* list(state): [info] of the jobs in state, as spool-ls reads them. */
static PyObject *
h_list(Handle *h, PyObject *args)
{
	struct listing l = { 0 };
	struct spool *sp;
	int state, rv, err;

	if (!PyArg_ParseTuple(args, "i", &state) ||
	    (sp = handle_of(h)) == NULL || (l.out = PyList_New(0)) == NULL)
		return NULL;
	l.state = (enum spool_state)state;
	Py_BEGIN_ALLOW_THREADS
	rv = spool_list_jobs(sp, l.state, 0, list_job, &l);
	err = errno;
	Py_END_ALLOW_THREADS
	if (PyErr_Occurred()) {
		Py_DECREF(l.out);
		return NULL;
	}
	if (l.err != 0) {
		Py_DECREF(l.out);
		return os_error(l.err, SPOOL_AT_CALL, l.id);
	}
	if (rv == -1) {
		Py_DECREF(l.out);
		return os_error(err, SPOOL_AT_CALL, "list");
	}
	return l.out;
}

/* One finding of spool_fsck, appended to the list arg under the GIL. */
static void
fsck_said(void *arg, const char *what, const char *problem, int said)
{
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *t;

	if (!PyErr_Occurred()) {
		t = Py_BuildValue("(NNi)", field(what), field(problem), said);
		if (t != NULL)
			(void)PyList_Append((PyObject *)arg, t);
		Py_XDECREF(t);
	}
	PyGILState_Release(g);
}

/* fsck(flags): (result, [(what, problem, said)]); result 0 or 1. */
static PyObject *
h_fsck(Handle *h, PyObject *args)
{
	struct spool *sp;
	PyObject *out;
	int flags, rv, err;

	if (!PyArg_ParseTuple(args, "i", &flags) ||
	    (sp = handle_of(h)) == NULL || (out = PyList_New(0)) == NULL)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rv = spool_fsck(sp, flags, fsck_said, out);
	err = errno;
	Py_END_ALLOW_THREADS
	if (PyErr_Occurred()) {
		Py_DECREF(out);
		return NULL;
	}
	if (rv == -1) {
		Py_DECREF(out);
		return os_error(err, SPOOL_AT_CALL, "fsck");
	}
	return Py_BuildValue("(iN)", rv, out);
}

/* renew(id, token, lease_ms): result. */
static PyObject *
h_renew(Handle *h, PyObject *args)
{
	struct spool_result res;
	struct spool *sp;
	unsigned long long tok;
	long long lease;
	const char *id;
	int rv, err;

	if (!PyArg_ParseTuple(args, "sKL", &id, &tok, &lease) ||
	    (sp = handle_of(h)) == NULL)
		return NULL;
	memset(&res, 0, sizeof(res));
	Py_BEGIN_ALLOW_THREADS
	rv = spool_renew(sp, id, tok, lease, &res);
	err = errno;
	Py_END_ALLOW_THREADS
	if (rv == -1 && res.status == 0)
		return os_error(err, SPOOL_AT_CALL, id);
	return result(id, &res);
}

static PyObject *
h_paused(Handle *h, PyObject *unused)
{
	struct spool *sp;
	int r, err;

	(void)unused;
	if ((sp = handle_of(h)) == NULL)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	r = spool_paused(sp);
	err = errno;
	Py_END_ALLOW_THREADS
	if (r == -1)
		return os_error(err, SPOOL_AT_CALL, "paused");
	return PyBool_FromLong(r);
}

/* next_due(): ms since the epoch of the next due job, or None. */
static PyObject *
h_next_due(Handle *h, PyObject *unused)
{
	struct spool *sp;
	int64_t when;
	int r, err;

	(void)unused;
	if ((sp = handle_of(h)) == NULL)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	r = spool_next_due(sp, &when);
	err = errno;
	Py_END_ALLOW_THREADS
	if (r == -1)
		return os_error(err, SPOOL_AT_CALL, "next due");
	if (when == INT64_MAX)
		Py_RETURN_NONE;
	return PyLong_FromLongLong((long long)when);
}

static void
h_dealloc(Handle *h)
{
	if (h->sp != NULL)
		spool_close(h->sp);
	PyObject_Free(h);
}

static PyMethodDef handle_methods[] = {
	{ "close", (PyCFunction)h_close, METH_NOARGS, NULL },
	{ "enqueue", (PyCFunction)h_enqueue, METH_VARARGS, NULL },
	{ "claim", (PyCFunction)h_claim, METH_VARARGS, NULL },
	{ "finish", (PyCFunction)h_finish, METH_VARARGS, NULL },
	{ "finish_claim", (PyCFunction)h_finish_claim, METH_VARARGS, NULL },
	{ "settings", (PyCFunction)h_settings, METH_NOARGS, NULL },
	{ "stat", (PyCFunction)h_stat, METH_NOARGS, NULL },
	{ "renew", (PyCFunction)h_renew, METH_VARARGS, NULL },
	{ "paused", (PyCFunction)h_paused, METH_NOARGS, NULL },
	{ "operate", (PyCFunction)h_operate, METH_VARARGS, NULL },
	{ "pause", (PyCFunction)h_pause, METH_VARARGS, NULL },
	{ "audit", (PyCFunction)h_audit, METH_NOARGS, NULL },
	{ "show", (PyCFunction)h_show, METH_VARARGS, NULL },
	{ "list", (PyCFunction)h_list, METH_VARARGS, NULL },
	{ "fsck", (PyCFunction)h_fsck, METH_VARARGS, NULL },
	{ "next_due", (PyCFunction)h_next_due, METH_NOARGS, NULL },
	{ NULL, NULL, 0, NULL }
};

static PyTypeObject HandleType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "spool._spool.Handle",
	.tp_basicsize = sizeof(Handle),
	.tp_dealloc = (destructor)h_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "An open spool: a struct spool of lib/spool.h.",
	.tp_methods = handle_methods,
};

static PyMethodDef module_methods[] = {
	{ "open", mod_open, METH_VARARGS, NULL },
	{ "init", mod_init, METH_VARARGS, NULL },
	{ "error", mod_error, METH_VARARGS, NULL },
	{ "name", mod_name, METH_VARARGS, NULL },
	{ "class_from_name", mod_class_from_name, METH_VARARGS, NULL },
	{ "valid", mod_valid, METH_VARARGS, NULL },
	{ "watch", mod_watch, METH_VARARGS, NULL },
	{ "duration", mod_duration, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL }
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_spool",
	"libspool's calls, for the spool package.", -1, module_methods,
	NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC PyInit__spool(void);

PyMODINIT_FUNC
PyInit__spool(void)
{
	PyObject *m;

	if (PyType_Ready(&HandleType) < 0 ||
	    (m = PyModule_Create(&module)) == NULL)
		return NULL;
	if (PyModule_AddIntConstant(m, "AT_OPEN", SPOOL_AT_OPEN) < 0 ||
	    PyModule_AddIntConstant(m, "AT_INIT", SPOOL_AT_INIT) < 0 ||
	    PyModule_AddIntConstant(m, "AT_CALL", SPOOL_AT_CALL) < 0 ||
	    PyModule_AddIntConstant(m, "OK", SPOOL_OK) < 0 ||
	    PyModule_AddIntConstant(m, "RETRY", SPOOL_RETRY) < 0 ||
	    PyModule_AddIntConstant(m, "PERMANENT", SPOOL_PERMANENT) < 0 ||
	    PyModule_AddIntConstant(m, "RELEASE", SPOOL_RELEASE) < 0 ||
	    PyModule_AddIntConstant(m, "BATCH_MAX", SPOOL_BATCH_MAX) < 0 ||
	    PyModule_AddIntConstant(m, "ABSENT", SPOOL_ABSENT) < 0 ||
	    PyModule_AddIntConstant(m, "NEW", SPOOL_NEW) < 0 ||
	    PyModule_AddIntConstant(m, "FSCK_REPAIR", SPOOL_FSCK_REPAIR) < 0 ||
	    PyModule_AddIntConstant(m, "FSCK_RESTORED", SPOOL_FSCK_RESTORED) < 0 ||
	    PyModule_AddIntConstant(m, "FSCK_VERIFY", SPOOL_FSCK_VERIFY) < 0 ||
	    PyModule_AddIntConstant(m, "LEASED", SPOOL_LEASED) < 0 ||
	    PyModule_AddIntConstant(m, "DONE", SPOOL_DONE) < 0 ||
	    PyModule_AddIntConstant(m, "DEAD", SPOOL_DEAD) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	Py_INCREF(&HandleType);
	return m;
}
