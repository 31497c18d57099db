"""The C text of the session model's native search (``proofs/native.py``), the same for every
configuration.

``proofs/native.py``'s ``Generated`` puts before :data:`RUNTIME` the sizes (``W`` bytes a state,
``NMOVES`` moves, ``NSTATE`` state and ``NSTEP`` step properties), ``GRAPH``, ``FAIR``, ``SYM``
and the canonical key, and between :data:`RUNTIME` and :data:`API` the generated moves, the
property judges and ``settled_``.  :data:`RUNTIME` is the run's record, the hash set of keys and
the breadth-first expansion; :data:`API` the functions ``load`` declares with :mod:`ctypes`
(``nb_new``, ``nb_run``, ``nb_stats``, ``nb_results``, ``nb_path``, ``nb_find``, ``nb_pending``, ``nb_state``,
``nb_graph``, ``nb_live``, ``nb_free``, ...), whose signatures both sides must keep alike.
"""

RUNTIME = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct Rec;

typedef struct Run {
    sc *states; unsigned char *keys; int32_t *parent; int16_t *pmove;
    long count, cap, next, limit;
    uint64_t *table; long tcap;  /* (the hash's high 32 bits << 32) | (index + 1); 0 empty */
    long transitions, deadlocks, first_deadlock;
    long level_start, level_end, depth, nlevels;
    long *levels; long levels_cap;
    int complete, error;
    long first_state[NSTATE + 1];
    long first_step[NSTEP + 1], first_step_move[NSTEP + 1];
    long move_count[NMOVES];
#if GRAPH
    /* the state graph for the liveness judge: edges (to another state), and per state whether
       it is settled, its last stuttering move (or -1) and whether a fair move leaves it */
    int32_t *esrc, *edst; int16_t *emove; long ecount, ecap;
    unsigned char *gsettled, *gfair; int32_t *gstutter;
#endif
    /* the workers of nb_run_par (one record each) and the batches they expanded */
    struct Rec *recs; int nrecs; long parallel;
} Run;

static uint64_t hash_key(const unsigned char *x) {
    uint64_t h = 1469598103934665603ULL;
    for (int k = 0; k < KW; k++) { h ^= x[k]; h *= 1099511628211ULL; }
    h ^= h >> 29; h *= 0xbf58476d1ce4e5b9ULL; h ^= h >> 32;
    return h;
}

#if SYM
#define KEY_AT(R, i) ((R)->keys + (long)(i) * KW)
#else
#define KEY_AT(R, i) ((const unsigned char *)((R)->states + (long)(i) * W))
#endif

/* A slot of the table holds a state's index and its hash's high 32 bits, which place it (so
   the table grows without reading a key) and are compared before the key is. */
#define TAG(hash) ((uint32_t)((hash) >> 32))
#define SLOT(tag, cap) ((uint64_t)(tag) & (uint64_t)((cap) - 1))

static int grow_table(Run *R) {
    long ncap = R->tcap * 2;
    uint64_t *nt = calloc((size_t)ncap, sizeof(uint64_t));
    if (!nt) return -1;
    for (long k = 0; k < R->tcap; k++) {
        uint64_t e = R->table[k];
        if (!e) continue;
        uint64_t h = SLOT(e >> 32, ncap);
        while (nt[h]) h = (h + 1) & (uint64_t)(ncap - 1);
        nt[h] = e;
    }
    free(R->table); R->table = nt; R->tcap = ncap;
    return 0;
}

static int grow_states(Run *R) {
    long ncap = R->cap * 2;
    sc *ns = realloc(R->states, (size_t)ncap * W);
    if (!ns) return -1;
    R->states = ns;
    int32_t *np = realloc(R->parent, (size_t)ncap * sizeof(int32_t));
    if (!np) return -1;
    R->parent = np;
    int16_t *nm = realloc(R->pmove, (size_t)ncap * sizeof(int16_t));
    if (!nm) return -1;
    R->pmove = nm;
#if GRAPH
    unsigned char *gs = realloc(R->gsettled, (size_t)ncap);
    if (!gs) return -1;
    R->gsettled = gs;
    unsigned char *gf = realloc(R->gfair, (size_t)ncap);
    if (!gf) return -1;
    R->gfair = gf;
    int32_t *gt = realloc(R->gstutter, (size_t)ncap * sizeof(int32_t));
    if (!gt) return -1;
    R->gstutter = gt;
#endif
#if SYM
    unsigned char *nk = realloc(R->keys, (size_t)ncap * KW);
    if (!nk) return -1;
    R->keys = nk;
#endif
    R->cap = ncap;
    return 0;
}

static void judge_state(Run *R, const sc *t, long idx);

/* the index of the state of key `key` (its hash `hash`), or -1; reads the table only */
static long find_keyed(const Run *R, const unsigned char *key, uint64_t hash) {
    uint32_t tag = TAG(hash);
    uint64_t h = SLOT(tag, R->tcap);
    for (;;) {
        uint64_t e = R->table[h];
        if (!e) return -1;
        uint32_t v = (uint32_t)e;
        if ((uint32_t)(e >> 32) == tag && memcmp(KEY_AT(R, v - 1), key, KW) == 0) return (long)v - 1;
        h = (h + 1) & (uint64_t)(R->tcap - 1);
    }
}

/* the index of t (key `key`, its hash `hash`; reached from state si by move m), added if new
   (*isnew set), or -1 when it is new and the search is at its limit */
static long add_keyed(Run *R, const sc *t, const unsigned char *key, uint64_t hash, long si,
                      int m, int *isnew) {
    uint32_t tag = TAG(hash);
    uint64_t h = SLOT(tag, R->tcap);
    for (;;) {
        uint64_t e = R->table[h];
        if (!e) break;
        uint32_t v = (uint32_t)e;
        if ((uint32_t)(e >> 32) == tag && memcmp(KEY_AT(R, v - 1), key, KW) == 0) return (long)v - 1;
        h = (h + 1) & (uint64_t)(R->tcap - 1);
    }
    if (R->count >= R->limit) { R->complete = 0; return -1; }
    if (R->count == R->cap && grow_states(R)) { R->error = -2; return -1; }
    long idx = R->count++;
    memcpy(R->states + idx * W, t, W);
#if SYM
    memcpy(R->keys + idx * KW, key, KW);
#endif
    R->parent[idx] = (int32_t)si;
    R->pmove[idx] = (int16_t)m;
    R->table[h] = ((uint64_t)tag << 32) | (uint64_t)(idx + 1);
    *isnew = 1;
    if (R->count * 2 > R->tcap && grow_table(R)) { R->error = -2; return idx; }
    judge_state(R, t, idx);
    return idx;
}

static long add_state(Run *R, const sc *t, long si, int m, int *isnew) {
#if SYM
    unsigned char key[KW];
    make_key(t, key);
#else
    const unsigned char *key = (const unsigned char *)t;
#endif
    return add_keyed(R, t, key, hash_key(key), si, m, isnew);
}

/* the index of the state whose key is that of t, or -1 */
static long find_state(Run *R, const sc *t) {
#if SYM
    unsigned char key[KW];
    make_key(t, key);
#else
    const unsigned char *key = (const unsigned char *)t;
#endif
    return find_keyed(R, key, hash_key(key));
}

/* a transition from si by m counted, and the step properties' first events */
static void count_edge(Run *R, long si, int m, int bad) {
    R->transitions++;
    R->move_count[m]++;
    if (bad) {
        for (int j = 0; j < NSTEP; j++)
            if ((bad >> j) & 1 && R->first_step[j] < 0) {
                R->first_step[j] = si; R->first_step_move[j] = m;
            }
    }
}

/* the transition from si by m ends in state v (-1: a new state past the limit), new if isnew */
static void edge_to(Run *R, long v, int isnew, long si, int m) {
#if GRAPH
    if (v >= 0) {
        if (R->ecount == R->ecap) {
            long nc = R->ecap ? R->ecap * 2 : 4096;
            int32_t *a = realloc(R->esrc, (size_t)nc * sizeof(int32_t));
            if (!a) { R->error = -2; return; }
            R->esrc = a;
            int32_t *b = realloc(R->edst, (size_t)nc * sizeof(int32_t));
            if (!b) { R->error = -2; return; }
            R->edst = b;
            int16_t *c = realloc(R->emove, (size_t)nc * sizeof(int16_t));
            if (!c) { R->error = -2; return; }
            R->emove = c;
            R->ecap = nc;
        }
        R->esrc[R->ecount] = (int32_t)si; R->edst[R->ecount] = (int32_t)v;
        R->emove[R->ecount] = (int16_t)m; R->ecount++;
        if (FAIR[m]) R->gfair[si] = 1;
    }
#else
    (void)v; (void)si; (void)m;
#endif
    if (isnew) {
        long lvl = R->nlevels;  /* level of the new state: the one after the level expanded */
        if (R->depth < lvl) R->depth = lvl;
        if (lvl >= R->levels_cap) {
            long nc = R->levels_cap * 2;
            long *nl = realloc(R->levels, (size_t)nc * sizeof(long));
            if (!nl) { R->error = -2; return; }
            memset(nl + R->levels_cap, 0, (size_t)(nc - R->levels_cap) * sizeof(long));
            R->levels = nl; R->levels_cap = nc;
        }
        R->levels[lvl]++;
    }
}

static void edge(Run *R, const sc *s, const sc *t, long si, int m, int bad) {
    count_edge(R, si, m, bad);
#if GRAPH
    if (memcmp(s, t, W) == 0) { R->gstutter[si] = m; return; }  /* a step that changes nothing */
#else
    (void)s;
#endif
    int isnew = 0;
    long v = add_state(R, t, si, m, &isnew);
    edge_to(R, v, isnew, si, m);
}
"""

API = r"""
void *nb_new(const sc *s0, long limit) {
    Run *R = calloc(1, sizeof(Run));
    if (!R) return 0;
    R->cap = 1024; R->tcap = 4096; R->limit = limit; R->complete = 1;
    R->states = malloc((size_t)R->cap * W);
    R->parent = malloc((size_t)R->cap * sizeof(int32_t));
    R->pmove = malloc((size_t)R->cap * sizeof(int16_t));
    R->table = calloc((size_t)R->tcap, sizeof(uint64_t));
    R->levels_cap = 64; R->levels = calloc((size_t)R->levels_cap, sizeof(long));
    if (!R->states || !R->parent || !R->pmove || !R->table || !R->levels) return 0;
#if GRAPH
    R->gsettled = malloc((size_t)R->cap);
    R->gfair = malloc((size_t)R->cap);
    R->gstutter = malloc((size_t)R->cap * sizeof(int32_t));
    if (!R->gsettled || !R->gfair || !R->gstutter) return 0;
#endif
#if SYM
    R->keys = malloc((size_t)R->cap * KW);
    if (!R->keys) return 0;
#endif
    for (int j = 0; j <= NSTATE; j++) R->first_state[j] = -1;
    for (int j = 0; j <= NSTEP; j++) { R->first_step[j] = -1; R->first_step_move[j] = -1; }
    R->first_deadlock = -1;
    R->level_end = 1; R->nlevels = 1; R->levels[0] = 1;
    memcpy(R->states, s0, W);
#if SYM
    make_key(s0, R->keys);
#endif
    uint32_t tag = TAG(hash_key(KEY_AT(R, 0)));
    R->parent[0] = -1; R->pmove[0] = -1; R->count = 1;
    R->table[SLOT(tag, R->tcap)] = ((uint64_t)tag << 32) | 1;
    judge_state(R, s0, 0);
    return R;
}

/* expand up to budget states; 1 when the search is over, 0 when not, -1 on an error */
int nb_run(void *p, long budget) {
    Run *R = p;
    sc t[W];
    while (R->next < R->count && budget-- > 0) {
        if (R->next == R->level_end) {
            R->level_start = R->level_end; R->level_end = R->count; R->nlevels++;
        }
        long si = R->next++;
        const sc *s = R->states + si * W;
        sc cur[W];
        memcpy(cur, s, W);  /* the array may move while successors are added */
#if GRAPH
        R->gsettled[si] = (unsigned char)(settled_(cur) ? 1 : 0);
        R->gstutter[si] = -1; R->gfair[si] = 0;
#endif
        int n = expand(R, 0, cur, t, si);
        if (n < 0 || R->error) return -1;
        if (n == 0 && !settled_(cur)) {
            R->deadlocks++;
            if (R->first_deadlock < 0) R->first_deadlock = si;
        }
    }
    return R->next >= R->count ? 1 : 0;
}

/* states, transitions, expanded, depth, level_start, level_end, complete, deadlocks,
   first deadlock, error, levels, batches expanded in parallel */
void nb_stats(void *p, long *o) {
    Run *R = p;
    o[0] = R->count; o[1] = R->transitions; o[2] = R->next; o[3] = R->depth;
    o[4] = R->level_start; o[5] = R->level_end; o[6] = R->complete; o[7] = R->deadlocks;
    o[8] = R->first_deadlock; o[9] = R->error; o[10] = R->nlevels; o[11] = R->parallel;
}

long nb_level(void *p, long k) { Run *R = p; return k < R->levels_cap ? R->levels[k] : 0; }

void nb_results(void *p, long *fs, long *fst, long *fsm, long *mc) {
    Run *R = p;
    for (int j = 0; j < NSTATE; j++) fs[j] = R->first_state[j];
    for (int j = 0; j < NSTEP; j++) { fst[j] = R->first_step[j]; fsm[j] = R->first_step_move[j]; }
    for (int m = 0; m < NMOVES; m++) mc[m] = R->move_count[m];
}

/* the moves from the initial state to state idx, last first; their number */
long nb_path(void *p, long idx, int *out, long cap) {
    Run *R = p;
    long n = 0;
    while (idx > 0 && n < cap) { out[n++] = R->pmove[idx]; idx = R->parent[idx]; }
    return n;
}

long nb_find(void *p, const sc *t) { return find_state(p, t); }

/* 1 when some client request is pending in state idx (the generated pending_) */
long nb_pending(void *p, long idx) { Run *R = p; return pending_(R->states + idx * W); }

/* the state of index idx, as the search met it */
void nb_state(void *p, long idx, sc *out) { Run *R = p; memcpy(out, R->states + idx * W, W); }

long nb_edges(void *p) {
#if GRAPH
    return ((Run *)p)->ecount;
#else
    (void)p; return -1;
#endif
}

/* the graph: edges (src, dst, move) and per state settled, stutter move and fair exit */
void nb_graph(void *p, int32_t *src, int32_t *dst, int32_t *move, unsigned char *settled,
              int32_t *stutter, unsigned char *fair) {
#if GRAPH
    Run *R = p;
    memcpy(src, R->esrc, (size_t)R->ecount * sizeof(int32_t));
    memcpy(dst, R->edst, (size_t)R->ecount * sizeof(int32_t));
    for (long k = 0; k < R->ecount; k++) move[k] = R->emove[k];
    memcpy(settled, R->gsettled, (size_t)R->next);
    memcpy(stutter, R->gstutter, (size_t)R->next * sizeof(int32_t));
    memcpy(fair, R->gfair, (size_t)R->next);
#else
    (void)p; (void)src; (void)dst; (void)move; (void)settled; (void)stutter; (void)fair;
#endif
}

/* The liveness judge's work on the graph, in C (proofs/liveness.py:find is the reference):
   flags[v] bit 0 where a settled state is reachable from v, bit 1 where v is stuck (not
   settled, and no move leads to another state); comp[v] v's strongly connected component
   (Tarjan's, numbered in the order they complete); trap[c] (room for one per node) 1 where a
   run fair to the FAIR moves can stay in component c for ever: a single state no fair move
   leaves, or a component in which every fair move enabled in all of its states is taken
   inside it; what is left to judge (a request pending throughout) reads the states.  Returns
   the number of components, -1 when out of memory, -2 without the graph. */
long nb_live(void *p, unsigned char *flags, int32_t *comp, unsigned char *trap) {
#if GRAPH
    Run *R = p;
    long n = R->next, e = R->ecount, ncomp = -1;
    long *off = calloc((size_t)n + 1, sizeof(long)), *roff = calloc((size_t)n + 1, sizeof(long));
    long *cur = malloc(((size_t)n + 1) * sizeof(long)), *cpos = malloc(((size_t)n + 1) * sizeof(long));
    int32_t *adj = malloc(((size_t)e + 1) * sizeof(int32_t));
    int32_t *radj = malloc(((size_t)e + 1) * sizeof(int32_t));
    int16_t *amove = malloc(((size_t)e + 1) * sizeof(int16_t));
    int32_t *idx = malloc(((size_t)n + 1) * sizeof(int32_t)), *low = malloc(((size_t)n + 1) * sizeof(int32_t));
    int32_t *stk = malloc(((size_t)n + 1) * sizeof(int32_t)), *cv = malloc(((size_t)n + 1) * sizeof(int32_t));
    int32_t *members = malloc(((size_t)n + 1) * sizeof(int32_t));
    unsigned char *on = calloc((size_t)n + 1, 1);
    if (!off || !roff || !cur || !cpos || !adj || !radj || !amove || !idx || !low || !stk || !cv
        || !members || !on) goto out;
    for (long k = 0; k < e; k++) { off[R->esrc[k] + 1]++; roff[R->edst[k] + 1]++; }
    for (long v = 0; v < n; v++) { off[v + 1] += off[v]; roff[v + 1] += roff[v]; }
    memcpy(cur, off, ((size_t)n + 1) * sizeof(long));
    for (long k = 0; k < e; k++) {
        long at = cur[R->esrc[k]]++;
        adj[at] = R->edst[k]; amove[at] = R->emove[k];
    }
    memcpy(cur, roff, ((size_t)n + 1) * sizeof(long));
    for (long k = 0; k < e; k++) radj[cur[R->edst[k]]++] = R->esrc[k];
    /* backward reachability from the settled states */
    long sp = 0;
    for (long v = 0; v < n; v++) {
        flags[v] = R->gsettled[v] ? 1 : 0;
        if (R->gsettled[v]) stk[sp++] = (int32_t)v;
    }
    while (sp > 0) {
        int32_t v = stk[--sp];
        for (long k = roff[v]; k < roff[v + 1]; k++)
            if (!(flags[radj[k]] & 1)) { flags[radj[k]] |= 1; stk[sp++] = radj[k]; }
    }
    for (long v = 0; v < n; v++) {
        if (R->gsettled[v]) continue;
        int leaves = 0;
        for (long k = off[v]; k < off[v + 1]; k++) if (adj[k] != v) { leaves = 1; break; }
        if (!leaves) flags[v] |= 2;
    }
    /* Tarjan's strongly connected components, iterative */
    int32_t counter = 0;
    long csp = 0;
    ncomp = 0;
    sp = 0;
    for (long v = 0; v < n; v++) idx[v] = -1;
    for (long root = 0; root < n; root++) {
        if (idx[root] != -1) continue;
        idx[root] = low[root] = counter++; stk[sp++] = (int32_t)root; on[root] = 1;
        cv[csp] = (int32_t)root; cpos[csp] = off[root]; csp++;
        while (csp > 0) {
            int32_t v = cv[csp - 1];
            long k = cpos[csp - 1];
            if (k < off[v + 1]) {
                cpos[csp - 1]++;
                int32_t w = adj[k];
                if (idx[w] == -1) {
                    idx[w] = low[w] = counter++; stk[sp++] = w; on[w] = 1;
                    cv[csp] = w; cpos[csp] = off[w]; csp++;
                } else if (on[w] && idx[w] < low[v]) {
                    low[v] = idx[w];
                }
                continue;
            }
            if (low[v] == idx[v]) {
                int32_t w;
                do { w = stk[--sp]; on[w] = 0; comp[w] = (int32_t)ncomp; } while (w != v);
                ncomp++;
            }
            csp--;
            if (csp > 0 && low[v] < low[cv[csp - 1]]) low[cv[csp - 1]] = low[v];
        }
    }
    /* the members of each component, grouped (cur: where each component's members start) */
    for (long c = 0; c <= ncomp; c++) cur[c] = 0;
    for (long v = 0; v < n; v++) cur[comp[v] + 1]++;
    for (long c = 0; c < ncomp; c++) cur[c + 1] += cur[c];
    memcpy(cpos, cur, ((size_t)ncomp + 1) * sizeof(long));
    for (long v = 0; v < n; v++) members[cpos[comp[v]]++] = (int32_t)v;
    {
        int32_t seen[NMOVES], taken[NMOVES];
        long cnt[NMOVES];
        for (int m = 0; m < NMOVES; m++) { seen[m] = -1; taken[m] = -1; }
        for (long c = 0; c < ncomp; c++) {
            long a = cur[c], b = cur[c + 1], size = b - a;
            trap[c] = 0;
            if (size == 1) {
                int32_t u = members[a];
                int self = 0;
                for (long k = off[u]; k < off[u + 1]; k++) if (adj[k] == u) { self = 1; break; }
                if (!R->gfair[u]) { trap[c] = 1; continue; }
                if (!self) continue;
            }
            for (int m = 0; m < NMOVES; m++) cnt[m] = 0;
            for (long j = a; j < b; j++) {
                int32_t u = members[j];
                for (long k = off[u]; k < off[u + 1]; k++) {
                    int m = amove[k];
                    if (FAIR[m] && seen[m] != u) { seen[m] = u; cnt[m]++; }
                    if (comp[adj[k]] == c) taken[m] = (int32_t)c;
                }
            }
            trap[c] = 1;
            for (int m = 0; m < NMOVES; m++)
                if (FAIR[m] && cnt[m] == size && taken[m] != c) { trap[c] = 0; break; }
        }
    }
out:
    free(off); free(roff); free(cur); free(cpos); free(adj); free(radj); free(amove);
    free(idx); free(low); free(stk); free(cv); free(members); free(on);
    return ncomp;
#else
    (void)p; (void)flags; (void)comp; (void)trap; return -2;
#endif
}

void nb_free(void *p) {
    Run *R = p;
    if (!R) return;
#if GRAPH
    free(R->esrc); free(R->edst); free(R->emove); free(R->gsettled); free(R->gfair);
    free(R->gstutter);
#endif
    for (int k = 0; k < R->nrecs; k++) {
        Rec *B = &R->recs[k];
        free(B->dst); free(B->bad); free(B->mv); free(B->stut); free(B->msucc); free(B->mkeys);
        free(B->mhash); free(B->mres); free(B->mtab); free(B->nsucc); free(B->settled);
    }
    free(R->recs);
    free(R->states); free(R->keys); free(R->parent); free(R->pmove); free(R->table); free(R->levels); free(R);
}
"""
