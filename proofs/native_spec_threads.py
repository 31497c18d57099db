"""The C text of the declared models' native search on several threads (``nb_run_par``).

``proofs/native_spec_search.py`` puts :data:`PARALLEL` after its search: it uses the search's
state (``R``), its table (``find_hashed``, ``add_hashed``), the judging of a state in two halves
(``judge_into`` reads the search only, ``judged`` records), ``next_level`` and ``nb_run``, and the
generated moves, ``canon`` and ``final``.

``nb_run_par(run, budget, threads, parallel_from)`` takes a level's states in batches (at most
the caller's budget and :data:`BATCH` states, never across levels, so a batch reads only states
numbered before it) and splits each among the threads.  Each thread expands its part
(``expand_part``) into records, reading the search's states, table and wants and writing none
of them: per state whether some move changes it, whether ``final`` holds when no move is
enabled, its number of successors; per successor its move row, its step properties' events
(those still needed when the batch began), whether the move changed the state (with a
liveness goal, for the graph) and where it leads: the index of its kept state (its ``canon``,
computed by the thread) in the table as it stood before the batch, or, when not there, the
kept state itself (once per thread: a table of the thread's own finds it again), hashed and
judged.  The calling thread then hands the
records over (``hand_over``) in the order of the states and of their moves, as ``nb_run`` takes
the transitions: counts, coverage, first events, the successor added when new (so states are
numbered as on one thread, and ``max_states`` drops the same ones), the kept edges and the
per-state flags of the liveness graph, deadlocks.  A model error met by a thread stops its part
there; the records before it are handed over and the run stops on it, so the first error in
that order is the one reported, as on one thread.  A batch under ``parallel_from`` states (or
under two a thread) is expanded by ``nb_run`` itself.
"""

#: the most states of a batch: the records of a larger one would be handed over no sooner
#: and take more memory at once
BATCH = 1 << 16
#: the most threads a search takes (``nb_run_par`` takes no more)
MAX_THREADS = 16

PARALLEL = (
    r"""
#include <pthread.h>

#define MAX_THREADS """
    + str(MAX_THREADS)
    + """
#define BATCH """
    + str(BATCH)
    + r"""
#define NTW ((NT + 63) / 64)
#define AHEAD 16

/* one thread's part of a batch: the states [from, to) and their records */
typedef struct {
    R *r;
    long from, to;
    long n, cap;                 /* successors recorded, room for */
    int *dst, *mv;               /* where each leads (index, or -1 - j: its j-th miss), move row */
    unsigned char *moved;        /* the move changed the state (before its canon) */
    unsigned long long *ev;      /* NTW words a successor: step properties that settle on it */
    long nm, mcap;               /* distinct kept successors not in the table, room for */
    sc *mst;
    unsigned long *mh;
    unsigned char *mj;           /* NS + 1 a miss: judge_into's result */
    long *mres;                  /* its index once handed over (-1 before) */
    long *mtab, mtcap;           /* their open-addressing table (j + 1; 0 empty) */
    int *nsucc;
    unsigned char *sflag;        /* per state: 1 final (where no move), 2 some move changes it */
    long scap;
    long err, err_at;            /* a model error (move row + 1) and its state (-1: none) */
    int oom;
} Wk;

static int wk_grow(Wk *w) {
    long c = w->cap ? w->cap * 2 : 4096;
    if (!grow((void **)&w->dst, c, sizeof(int)) || !grow((void **)&w->mv, c, sizeof(int))
        || !grow((void **)&w->moved, c, 1)
        || !grow((void **)&w->ev, c * (NTW ? NTW : 1), sizeof(unsigned long long)))
        return 0;
    w->cap = c;
    return 1;
}

static int miss_grow(Wk *w) {
    long c = w->mcap ? w->mcap * 2 : 1024;
    if (!grow((void **)&w->mst, c * NV, 1) || !grow((void **)&w->mh, c, sizeof(unsigned long))
        || !grow((void **)&w->mj, c * (NS + 1), 1) || !grow((void **)&w->mres, c, sizeof(long)))
        return 0;
    w->mcap = c;
    long tc = w->mtcap ? w->mtcap : 2048;
    while (tc < c * 2) tc *= 2;
    if (tc != w->mtcap) {
        long *t = calloc((size_t)tc, sizeof(long));
        if (!t) return 0;
        for (long j = 0; j < w->nm; j++) {
            unsigned long x = w->mh[j] & (unsigned long)(tc - 1);
            while (t[x]) x = (x + 1) & (unsigned long)(tc - 1);
            t[x] = j + 1;
        }
        free(w->mtab);
        w->mtab = t;
        w->mtcap = tc;
    }
    return 1;
}

/* kept state c (hash h), not in the search's table: its number among this part's misses */
static long miss(Wk *w, const sc *c, unsigned long h) {
    if (w->nm == w->mcap && !miss_grow(w)) return -1;
    unsigned long x = h & (unsigned long)(w->mtcap - 1);
    while (w->mtab[x]) {
        long j = w->mtab[x] - 1;
        if (w->mh[j] == h && !memcmp(w->mst + j * NV, c, NV)) return j;
        x = (x + 1) & (unsigned long)(w->mtcap - 1);
    }
    long j = w->nm++;
    memcpy(w->mst + j * NV, c, NV);
    w->mh[j] = h;
    w->mres[j] = -1;
    judge_into(w->r, w->mst + j * NV, w->mj + j * (NS + 1));
    w->mtab[x] = j + 1;
    return j;
}

/* one thread: the states [from, to) expanded into records, the search only read */
static void *expand_part(void *arg) {
    Wk *w = arg;
    const R *r = w->r;
    sc q[NV], cq[NV];
    unsigned char res[NT + 1];
    w->n = 0; w->nm = 0; w->err = 0; w->err_at = -1; w->oom = 0;
    if (w->mtab) memset(w->mtab, 0, (size_t)w->mtcap * sizeof(long));
    long len = w->to - w->from;
    if (len > w->scap) {
        if (!grow((void **)&w->nsucc, len, sizeof(int)) || !grow((void **)&w->sflag, len, 1)) {
            w->oom = 1;
            return 0;
        }
        w->scap = len;
    }
    for (long i = w->from; i < w->to; i++) {
        const sc *p = r->st + i * NV;
        int n = 0;
        unsigned char flag = 0;
        for (int j = 0; j < NM; j++) {
            int f = MOVES[j](p, q, r->need_t, res, &w->err);
            if (f == 0) continue;
            if (f < 0) {
                w->err_at = i; w->nsucc[i - w->from] = n; w->sflag[i - w->from] = flag;
                return 0;
            }
            if (w->n == w->cap && !wk_grow(w)) { w->oom = 1; return 0; }
            long k = w->n++;
            w->mv[k] = j;
            w->moved[k] = r->nlive && memcmp(p, q, NV) != 0;  /* read with a graph only */
            if (w->moved[k]) flag |= 2;
            if (NT) {
                unsigned long long *ev = w->ev + k * NTW;
                for (int b = 0; b < NTW; b++) ev[b] = 0;
                for (int t = 0; t < NT; t++)
                    if (r->need_t[t] && res[t] == r->trig_t[t]) ev[t >> 6] |= 1ULL << (t & 63);
            }
            const sc *c = q;
            if (REDUCE) { canon(q, cq); c = cq; }
            unsigned long h = hash_of(c);
            long t = find_hashed(r, c, h);
            if (t < 0) {
                long m = miss(w, c, h);
                if (m < 0) { w->oom = 1; return 0; }
                t = -1 - m;
            }
            w->dst[k] = (int)t;
            n++;
        }
        if (n == 0 && final(p)) flag |= 1;
        w->nsucc[i - w->from] = n;
        w->sflag[i - w->from] = flag;
    }
    return 0;
}

/* part w's records taken as nb_run takes the transitions; -1 on a model error (its state's
   records before it taken) or no memory */
static int hand_over(R *r, Wk *w) {
    long at = 0;
    long end = w->err_at >= 0 ? w->err_at + 1 : w->to;
    for (long i = w->from; i < end; i++) {
        long s = i - w->from;
        int n = w->nsucc[s];
        r->head = i + 1;
        r->estart[i] = r->ne;
        if (r->nlive && (w->sflag[s] & 2)) r->changed[i] = 1;
        for (int e = 0; e < n; e++, at++) {
            int j = w->mv[at];
            long ahead = at + AHEAD;  /* a later new state's slot in the table, fetched early */
            if (ahead < w->n && w->dst[ahead] < 0 && w->mres[-1 - w->dst[ahead]] < 0)
                __builtin_prefetch(r->hash + SLOT(w->mh[-1 - w->dst[ahead]], r->hcap));
            r->transitions++;
            r->cov[j]++;
            const unsigned long long *ev = w->ev + at * NTW;
            if (NT && (NTW > 1 || ev[0])) {
                for (int k = 0; k < NT; k++)
                    if (r->need_t[k] && (ev[k >> 6] >> (k & 63) & 1)) {
                        r->tfirst[k] = i; r->tmove[k] = j; r->need_t[k] = 0;
                    }
            }
            long t = w->dst[at];
            if (t < 0) {
                long m = -1 - t;
                t = w->mres[m];
                if (t < 0) {
                    int added;
                    t = add_hashed(r, w->mst + m * NV, w->mh[m], i, j, &added);
                    if (t == -2) return -1;
                    if (t < 0) continue;
                    w->mres[m] = t;
                    if (added) judged(r, t, w->mj + m * (NS + 1));
                }
            }
            if (r->nlive) {
                if (t == i && w->moved[at]) r->renamed[i] = 1;
                if (r->ne == r->ecap) {
                    r->ecap *= 2;
                    if (!grow((void **)&r->eto, r->ecap, sizeof(int))
                        || !grow((void **)&r->emv, r->ecap, sizeof(int))) return -1;
                }
                r->eto[r->ne] = (int)t; r->emv[r->ne] = j; r->ne++;
            }
        }
        if (i == w->err_at) { r->err = w->err; return -1; }
        r->estart[i + 1] = r->ne;
        if (n == 0 && !(w->sflag[s] & 1)) {
            if (r->first_dead < 0) r->first_dead = i;
            r->deadlocks++;
        }
    }
    return 0;
}

static void free_workers(R *r) {
    Wk *ws = r->workers;
    for (int k = 0; k < r->nworkers; k++) {
        Wk *w = ws + k;
        free(w->dst); free(w->mv); free(w->moved); free(w->ev); free(w->mst); free(w->mh);
        free(w->mj); free(w->mres); free(w->mtab); free(w->nsucc); free(w->sflag);
    }
    free(ws);
    r->workers = 0;
    r->nworkers = 0;
}

/* nb_run on `threads` threads: each batch of at least `parallel_from` states is split among
   them (expand_part) and its records handed over in order on this thread (hand_over), so the
   run is nb_run's, number for number.  1 when the search is over, 0 when not, -1 on an error
   (a model error: err says which move). */
int nb_run_par(void *rp, long budget, int threads, long parallel_from) {
    R *r = rp;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (threads < 2) return nb_run(rp, budget);
    if (r->nworkers < threads) {
        free_workers(r);
        r->workers = calloc((size_t)threads, sizeof(Wk));
        if (!r->workers) return -1;
        r->nworkers = threads;
    }
    Wk *ws = r->workers;
    while (r->head < r->n && budget > 0) {
        if (r->head > r->level_end) {
            int lv = next_level(r);
            if (lv < 0) return -1;
            if (lv) break;
        }
        long from = r->head, to = r->level_end + 1;
        if (to - from > budget) to = from + budget;
        if (to - from > BATCH) to = from + BATCH;
        long len = to - from;
        budget -= len;
        if (len < parallel_from || len < 2 * threads) {
            if (nb_run(rp, len) < 0) return -1;
            continue;
        }
        long per = (len + threads - 1) / threads;
        for (int k = 0; k < threads; k++) {
            ws[k].r = r;
            ws[k].from = from + k * per < to ? from + k * per : to;
            ws[k].to = from + (k + 1) * per < to ? from + (k + 1) * per : to;
        }
        pthread_t th[MAX_THREADS];
        int started[MAX_THREADS] = {0};
        for (int k = 1; k < threads; k++)
            started[k] = pthread_create(&th[k], 0, expand_part, &ws[k]) == 0;
        expand_part(&ws[0]);
        for (int k = 1; k < threads; k++) {
            if (started[k]) pthread_join(th[k], 0);
            else expand_part(&ws[k]);  /* no thread to be had: expanded here */
        }
        r->split++;
        for (int k = 0; k < threads; k++) {
            if (ws[k].oom) return -1;
            if (hand_over(r, &ws[k]) < 0) return -1;
            if (ws[k].err_at >= 0) return -1;
        }
    }
    if (r->head >= r->n || r->stopped) { r->done = 1; return 1; }
    return 0;
}
"""
)
