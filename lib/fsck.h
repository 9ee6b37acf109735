/*
 * spool-fsck's own state, shared by its three files: fsck_audit.c (the
 * audit index, and the checks that read it), fsck_repair.c (what a repair
 * puts back, adopts, rebuilds or quarantines) and fsck.c (the walk of the
 * spool, and spool_fsck).  Private to them.
 */
#ifndef SPOOL_FSCK_H
#define SPOOL_FSCK_H

#include "internal.h"

#define TMP_STALE_MS	(24 * 3600 * 1000LL)	/* a tmp/ file this old is left */

/*
 * A file found in a state directory: its path from the spool's top, in
 * f->names, with the job's ID at idat.  Paths live end to end in one
 * buffer so that a big spool costs a few dozen bytes a file.  A file
 * named ID, or ID,NUMBER, where the state's names have another form (the
 * top of new/, leased/ID) is a job's file put there by hand: misplaced.
 */
struct ent {
	size_t rel;
	unsigned short idat, idlen;
	unsigned char state;		/* the directory's: enum spool_state */
	unsigned char misplaced;
};

/* An audit line, reduced to what a record must match. */
struct akey {
	uint64_t idh, tok;
	int64_t t;
	int ev;
};

struct fsck {
	struct spool *sp;
	int repair;
	void (*say)(void *arg, const char *what, const char *problem,
	    int said);
	void *arg;
	struct ent *ents;
	size_t nents, capents;
	char *names;			/* the paths of ents, and the sidecars' */
	size_t nnames, capnames;
	char **strays;			/* rel paths that are no job's */
	size_t nstrays;
	struct akey *keys;
	size_t nkeys, capkeys;
	struct audit_mark mark;		/* where the index's read ended */
	int indexed;			/* later reads add keys only */
	struct abuf ab;
	int problems, unfixed, err;
	int64_t oldest;			/* the earliest audit line kept */
	int restored;			/* SPOOL_FSCK_RESTORED */
	int verify;			/* SPOOL_FSCK_VERIFY */
	uint64_t maxtok;		/* the highest token anything names */
	uint64_t maxgiven;		/* the highest a sidecar or an audit
					   line names: handed out, not a
					   name a hand may have made */
	int forgot;			/* sidecars removed: sync meta/ */
	char **cut;			/* tmp/ names publish_cut found */
	size_t ncut;
	int pause_ev;			/* the last pause or resume line's */
	int64_t pause_t;
	struct suspect *sus;		/* lines of transitions not made */
	size_t nsus, capsus;
	struct suspect **bykey;		/* sus, sorted by key */
};

/*
 * An audit line whose transition did not happen, as the index (hashes)
 * says: the line itself is looked for once for all of them, after the
 * walk, by one read of the log.
 */
struct suspect {
	struct akey key;		/* first: a key for cmp_key */
	char id[SPOOL_ID_MAX + 1];
	int found;
	struct spool_audit line;
};

/*
 * How far a restore moves the token counter past every token the restored
 * spool names: the tokens handed out after the backup was taken are
 * nowhere in it.  2^48 is nine years of claims at a million a second, and
 * SPOOL_TOKEN_MAX leaves room for 3,552 restores.
 */
#define RESTORE_JUMP	((uint64_t)1 << 48)

#define ENT_REL(f, e)	((f)->names + (e)->rel)
#define ENT_ID(f, e)	((f)->names + (e)->rel + (e)->idat)

/* fsck_audit.c: the audit index, and the checks that read it */
uint64_t hash_id(const char *s, size_t len);
void problem(struct fsck *f, const char *what, int fixed, const char *fmt,
    ...) __attribute__((format(printf, 4, 5)));
int index_line(void *arg, const char *line, size_t len);
int cmp_key(const void *a, const void *b);
uint64_t audit_max_tok(struct fsck *f, uint64_t idh);
int check_supersede(struct fsck *f, struct job *j, uint64_t idh);
int check_audit(struct fsck *f, struct job *j, uint64_t idh, int lastvoid);
int check_unhappened(struct fsck *f, struct job *j, uint64_t idh,
    int lastvoid);
int settle_suspects(struct fsck *f);
int record_logged(const struct fsck *f, uint64_t idh, const struct rec *r);
int audit_knows(const struct fsck *f, uint64_t idh);
int check_twice_given(struct fsck *f, uint64_t from);

/* fsck_repair.c: what a repair puts back, adopts, rebuilds, quarantines */
int quarantine(struct fsck *f, const char *rel);
int all_gone(struct fsck *f, const struct ent *ents, size_t n);
int mark_restored(struct fsck *f, struct job *j);
int where_of(struct spool *sp, const char *id, const struct rec *r,
    char *buf, size_t size);
int settle_missing(struct fsck *f, struct job *j, const char *where,
    struct ent *ents, size_t n);
int publish_cut(struct fsck *f, struct job *j);
int orphans(struct fsck *f, const char *id, struct ent *ents, size_t n,
    struct job *held);
int damaged_sidecar(struct fsck *f, const char *id, struct ent *ents,
    size_t n);

#endif
