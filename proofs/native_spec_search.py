"""The breadth-first search of the declared models' native engine, in C (one text for every spec).

``proofs/native_spec_c.py`` puts before it the sizes (``NV`` bytes a state, ``NM`` moves in
the table, ``NS`` state and ``NT`` step properties), the moves ``MOVES[j](p, q, need, res,
err)`` (each ending in ``ranks``), ``judge``, ``in_range``, ``final``, ``ranks`` and ``canon``, and
``REDUCE``: with it, the initial state (its ranks applied, as every successor's) and every
successor are kept as ``canon`` gives them (the least of their renamings), while each step
property is judged on the successor as the move wrote it, as the explorer judges it.
The search keeps the states packed in discovery order (so
the queue is the range ``head .. n`` and the levels are ranges too), an open-addressing hash
set of them, and per state its parent, the move taken from it and its depth.  It records what
the explorer of ``proofs/explorer.py`` records, at the same moments and in the same order:

* per state property, the first state where it is settled (``always``/auxiliary: false;
  ``sometimes``: true; ``trig_s`` says which) and, per liveness goal, its value on each state;
* per step property, the first transition (state, move row) where it is settled;
* transitions, per move its firings, deadlocks (the states with no move where ``final`` does
  not hold, judged on the state as kept, a reduced one as it is: the first and their count),
  the first state out of its variables' ranges, whether a successor was dropped past
  ``max_states``;
* with a liveness goal, every kept edge (move row, successor), each state's edges contiguous,
  and per state whether some move changes it (its successor, as the move wrote it, differs
  from the state: with ``REDUCE``, before its renaming) and whether some move goes to another
  state of its orbit (its successor differs from it but is kept as it).

``nb_run`` expands at most ``budget`` states a call (so the caller can report progress), stops
at a level's end once every property in ``want`` is settled, and returns 1 when done.
``nb_run_par`` is ``nb_run`` on several threads (``proofs/native_spec_threads.py``): a level's
states in batches, each split among the threads, which expand their parts into records (the
table only read, each successor's ``canon`` computed there), then handed over on one thread in
the order ``nb_run`` takes the transitions, so the run is ``nb_run``'s, number for number; a
batch under its ``parallel_from`` states is expanded by ``nb_run`` itself.  For it a new state's
judging comes in two halves (``judge_into`` reads, ``judged`` records) and the table's lookup
(``find_hashed``) apart from its insertion (``add_hashed``).
``nb_fair`` judges one liveness goal: the first state (least index) of a strongly connected
component of goal-less states in which no fair move is enabled everywhere yet never taken
inside (Tarjan's algorithm, iterative), and, given room, that component's states.  Under
symmetry reduction (``firsts`` given) it judges so only the components of one state with no
move to another state of its own orbit, and hands every other component out (its states, in
the order Python's ``liveness.sccs`` lists them, its first state and its size), to be unfolded
into its orbits' real states in Python (``liveness.fair_violation_unfolded``); ``nb_edges``
reads a state's kept edges (the lasso's loop is walked through them in Python); ``nb_nodes``
the states on the path to one (a reduced trace is replayed through them in Python).
``nb_find`` gives the index of the state kept for a packed state (its least renaming looked up
in the hash set).
``nb_canon`` and ``nb_ranks`` apply ``canon`` and ``ranks`` to one packed state (for the tests).
``nb_reach`` and ``nb_stuck`` judge the liveness of the graph itself: the first state from
which no goal state is reachable (backward over the kept edges), and the first goal-less state
no move changes.
"""

from .native_spec_threads import PARALLEL

SEARCH = (
    r"""
typedef struct {
    long n, cap, head, level_end, max_states, transitions, deadlocks, first_dead, range_first;
    long err, nlevels, lcap, ne, ecap, hcap;
    int overflow, stopped, done, nlive;
    long split;           /* batches expanded on more than one thread (nb_run_par) */
    void *workers;        /* nb_run_par's, kept from batch to batch */
    int nworkers;
    sc *st;
    int *parent, *pmove, *depth;
    unsigned long *hash;  /* per slot: the high half of a state's hash and its index + 1 */
    long *levels;
    long *estart;
    int *eto, *emv;
    unsigned char *goal, *changed, *renamed;
    long cov[NM + 1];
    long sfirst[NS + 1];
    long tfirst[NT + 1], tmove[NT + 1];
    unsigned char trig_s[NS + 1], trig_t[NT + 1], live_s[NS + 1];
    unsigned char need_s[NS + 1], need_t[NT + 1], want_s[NS + 1], want_t[NT + 1];
} R;

static unsigned long hash_of(const sc *p) {
    unsigned long h = 1469598103934665603UL;
    for (int i = 0; i < NV; i++) { h ^= (unsigned char)p[i]; h *= 1099511628211UL; }
    return h ^ (h >> 29);
}

/* A slot of the table keeps the high half of its state's hash (TAG) beside the state's index
   + 1 (0: an empty slot); a state's first slot is read from that half too (SLOT), so the table
   grows without reading a state, and a probe reads a state only where the halves agree. */
#define TAG(h) ((h) & 0xffffffff00000000UL)
#define SLOT(h, cap) (((h) >> 32) & (unsigned long)((cap) - 1))
#define INDEX(e) ((long)((e) & 0xffffffffUL) - 1)

static int grow(void **a, long n, size_t sz) {
    void *b = realloc(*a, (size_t)n * sz);
    if (!b) return 0;
    *a = b;
    return 1;
}

static int rehash(R *r) {
    long cap = r->hcap * 2;
    unsigned long *h = calloc((size_t)cap, sizeof(unsigned long));
    if (!h) return 0;
    for (long k = 0; k < r->hcap; k++) {
        unsigned long e = r->hash[k];
        if (!e) continue;
        unsigned long x = SLOT(e, cap);
        while (h[x]) x = (x + 1) & (unsigned long)(cap - 1);
        h[x] = e;
    }
    free(r->hash);
    r->hash = h;
    r->hcap = cap;
    return 1;
}

/* the index of state p (of hash h), or -1 when new and not added, -2 on no memory; *added
   says */
static long add_hashed(R *r, const sc *p, unsigned long h, long from, int mv, int *added) {
    unsigned long x = SLOT(h, r->hcap), tag = TAG(h), e;
    *added = 0;
    while ((e = r->hash[x])) {
        if (TAG(e) == tag && !memcmp(r->st + INDEX(e) * NV, p, NV)) return INDEX(e);
        x = (x + 1) & (unsigned long)(r->hcap - 1);
    }
    if (r->n >= r->max_states) { r->overflow = 1; return -1; }
    if (r->n == r->cap) {
        long c = r->cap * 2;
        if (!grow((void **)&r->st, c * NV, 1) || !grow((void **)&r->parent, c, sizeof(int))
            || !grow((void **)&r->pmove, c, sizeof(int)) || !grow((void **)&r->depth, c, sizeof(int))
            || !grow((void **)&r->estart, c + 1, sizeof(long))
            || (r->nlive && (!grow((void **)&r->goal, c * r->nlive, 1)
                             || !grow((void **)&r->changed, c, 1)
                             || !grow((void **)&r->renamed, c, 1))))
            return -2;
        r->cap = c;
    }
    long i = r->n++;
    memcpy(r->st + i * NV, p, NV);
    r->parent[i] = (int)from;
    r->pmove[i] = mv;
    r->depth[i] = from < 0 ? 0 : r->depth[from] + 1;
    if (r->nlive) r->changed[i] = r->renamed[i] = 0;
    r->hash[x] = tag | (unsigned long)(i + 1);
    *added = 1;
    if (2 * r->n > r->hcap && !rehash(r)) return -2;
    return i;
}

static long find_or_add(R *r, const sc *p, long from, int mv, int *added) {
    return add_hashed(r, p, hash_of(p), from, mv, added);
}

/* the index of state p (of hash h) in the table, -1 when not there; reads the search only */
static long find_hashed(const R *r, const sc *p, unsigned long h) {
    unsigned long x = SLOT(h, r->hcap), tag = TAG(h), e;
    while ((e = r->hash[x])) {
        if (TAG(e) == tag && !memcmp(r->st + INDEX(e) * NV, p, NV)) return INDEX(e);
        x = (x + 1) & (unsigned long)(r->hcap - 1);
    }
    return -1;
}

/* the state properties still needed or liveness goals judged on p into res[0 .. NS), and
   whether p is within its variables' ranges into res[NS]; reads the search only */
static void judge_into(const R *r, const sc *p, unsigned char *res) {
    unsigned char all[NS + 1];
    for (int k = 0; k < NS; k++) all[k] = r->need_s[k] || r->live_s[k];
    judge(p, all, res);
    res[NS] = (unsigned char)in_range(p);
}

/* new state i recorded as judged (judge_into, on it or before: the properties needed then) */
static void judged(R *r, long i, const unsigned char *res) {
    if (r->range_first < 0 && !r->overflow && !res[NS]) r->range_first = i;
    int g = 0;
    for (int k = 0; k < NS; k++) {
        if (r->live_s[k]) { r->goal[i * r->nlive + g++] = res[k]; continue; }
        if (r->need_s[k] && res[k] == r->trig_s[k]) { r->sfirst[k] = i; r->need_s[k] = 0; }
    }
}

static void judge_state(R *r, long i) {
    unsigned char res[NS + 1];
    judge_into(r, r->st + i * NV, res);
    judged(r, i, res);
}

void *nb_new(const char *init, long max_states, const unsigned char *trig_s,
             const unsigned char *live_s, const unsigned char *trig_t,
             const unsigned char *want_s, const unsigned char *want_t) {
    R *r = calloc(1, sizeof(R));
    if (!r) return 0;
    r->cap = 1024; r->hcap = 4096; r->lcap = 64; r->ecap = 4096;
    r->max_states = max_states;
    r->st = malloc((size_t)r->cap * NV); r->parent = malloc(r->cap * sizeof(int));
    r->pmove = malloc(r->cap * sizeof(int)); r->depth = malloc(r->cap * sizeof(int));
    r->estart = malloc((r->cap + 1) * sizeof(long));
    r->hash = calloc((size_t)r->hcap, sizeof(unsigned long)); r->levels = malloc(r->lcap * sizeof(long));
    for (int k = 0; k < NS; k++) {
        r->trig_s[k] = trig_s[k]; r->live_s[k] = live_s[k]; r->need_s[k] = !live_s[k];
        r->want_s[k] = want_s[k]; r->sfirst[k] = -1; r->nlive += live_s[k];
    }
    for (int k = 0; k < NT; k++) {
        r->trig_t[k] = trig_t[k]; r->need_t[k] = 1; r->want_t[k] = want_t[k];
        r->tfirst[k] = -1; r->tmove[k] = -1;
    }
    if (r->nlive) {
        r->goal = malloc((size_t)r->cap * r->nlive); r->changed = malloc((size_t)r->cap);
        r->renamed = malloc((size_t)r->cap);
        r->eto = malloc(r->ecap * sizeof(int)); r->emv = malloc(r->ecap * sizeof(int));
    }
    r->first_dead = -1; r->range_first = -1;
    int added;
    sc ranked[NV], first[NV];
    memcpy(ranked, init, NV);
    ranks(ranked);
    canon(ranked, first);
    find_or_add(r, first, -1, -1, &added);
    r->levels[r->nlevels++] = 1;
    judge_state(r, 0);
    return r;
}

static int wanted_settled(R *r) {
    int any = 0;
    for (int k = 0; k < NS; k++) if (r->want_s[k]) { any = 1; if (r->need_s[k]) return 0; }
    for (int k = 0; k < NT; k++) if (r->want_t[k]) { any = 1; if (r->need_t[k]) return 0; }
    return any;
}

/* the next level begun (at head, past level_end): 0, or 1 when every property in `want` is
   settled (the search stops), -1 on no memory */
static int next_level(R *r) {
    if (wanted_settled(r)) { r->stopped = 1; return 1; }
    if (r->nlevels == r->lcap) {
        r->lcap *= 2;
        if (!grow((void **)&r->levels, r->lcap, sizeof(long))) return -1;
    }
    r->levels[r->nlevels++] = r->n - 1 - r->level_end;
    r->level_end = r->n - 1;
    return 0;
}

int nb_run(void *rp, long budget) {
    R *r = rp;
    sc q[NV], cq[NV];
    unsigned char res[NT + 1];
    while (r->head < r->n && budget-- > 0) {
        long i = r->head;
        if (i > r->level_end) {
            int lv = next_level(r);
            if (lv < 0) return -1;
            if (lv) break;
        }
        r->head++;
        r->estart[i] = r->ne;
        int moved = 0;
        for (int j = 0; j < NM; j++) {
            const sc *p = r->st + i * NV;
            int f = MOVES[j](p, q, r->need_t, res, &r->err);
            if (f == 0) continue;
            if (f < 0) return -1;
            moved = 1;
            if (r->nlive && !r->changed[i] && memcmp(p, q, NV)) r->changed[i] = 1;
            r->transitions++;
            r->cov[j]++;
            for (int k = 0; k < NT; k++)
                if (r->need_t[k] && res[k] == r->trig_t[k]) {
                    r->tfirst[k] = i; r->tmove[k] = j; r->need_t[k] = 0;
                }
            int added;
            if (REDUCE) canon(q, cq);
            long t = find_or_add(r, REDUCE ? cq : q, i, j, &added);
            if (t == -2) return -1;
            if (t < 0) continue;
            if (added) judge_state(r, t);
            if (r->nlive) {
                if (t == i && memcmp(r->st + i * NV, q, NV)) r->renamed[i] = 1;
                if (r->ne == r->ecap) {
                    r->ecap *= 2;
                    if (!grow((void **)&r->eto, r->ecap, sizeof(int))
                        || !grow((void **)&r->emv, r->ecap, sizeof(int))) return -1;
                }
                r->eto[r->ne] = (int)t; r->emv[r->ne] = j; r->ne++;
            }
        }
        r->estart[i + 1] = r->ne;
        if (!moved && !final(r->st + i * NV)) {
            if (r->first_dead < 0) r->first_dead = i;
            r->deadlocks++;
        }
    }
    if (r->head >= r->n || r->stopped) { r->done = 1; return 1; }
    return 0;
}

void nb_stats(void *rp, long *out) {
    R *r = rp;
    out[0] = r->n; out[1] = r->transitions; out[2] = r->n ? r->depth[r->n - 1] : 0;
    out[3] = r->head; out[4] = r->deadlocks; out[5] = r->first_dead; out[6] = r->range_first;
    out[7] = r->overflow; out[8] = r->stopped; out[9] = r->err; out[10] = r->nlevels;
    out[11] = r->ne; out[12] = r->split;
}

long nb_level(void *rp, long k) { return ((R *)rp)->levels[k]; }

void nb_results(void *rp, long *sfirst, long *tfirst, long *tmove, long *cov) {
    R *r = rp;
    for (int k = 0; k < NS; k++) sfirst[k] = r->sfirst[k];
    for (int k = 0; k < NT; k++) { tfirst[k] = r->tfirst[k]; tmove[k] = r->tmove[k]; }
    for (int j = 0; j < NM; j++) cov[j] = r->cov[j];
}

/* the move rows from the initial state to state i, last first; their number */
long nb_path(void *rp, long i, int *out, long cap) {
    R *r = rp;
    long n = 0;
    while (r->parent[i] >= 0 && n < cap) { out[n++] = r->pmove[i]; i = r->parent[i]; }
    return n;
}

/* the states from state i back to the initial state, i first; their number */
long nb_nodes(void *rp, long i, long *out, long cap) {
    R *r = rp;
    long n = 0;
    out[n++] = i;
    while (r->parent[i] >= 0 && n < cap) { i = r->parent[i]; out[n++] = i; }
    return n;
}

void nb_state(void *rp, long i, char *out) { memcpy(out, ((R *)rp)->st + i * NV, NV); }

/* the state kept for packed state s: itself, or with REDUCE its least renaming */
void nb_canon(const char *s, char *out) { canon((const sc *)s, (sc *)out); }

/* packed state s with the spec's ranks applied (s itself without them) */
void nb_ranks(const char *s, char *out) { memcpy(out, s, NV); ranks((sc *)out); }

long nb_fair(void *rp, int live, const unsigned char *fair, long *members, long *nmembers,
             long *firsts, long *sizes, long *ncomps) {
    R *r = rp;
    long n = r->head, found = -1, root_of_found = -1, counter = 0, sp = 0, cs = 0;
    long *idx = malloc((n + 1) * sizeof(long)), *low = malloc((n + 1) * sizeof(long));
    long *stack = malloc((n + 1) * sizeof(long)), *call = malloc((n + 1) * sizeof(long));
    long *pos = malloc((n + 1) * sizeof(long)), *comp = malloc((n + 1) * sizeof(long));
    unsigned char *on = calloc((size_t)n + 1, 1);
    long cnt[NM + 1];
    unsigned char inside[NM + 1];
    if (!idx || !low || !stack || !call || !pos || !comp || !on) { found = -2; goto out; }
    for (long v = 0; v < n; v++) { idx[v] = -1; comp[v] = -1; }
#define BAD(v) ((v) < n && !r->goal[(v) * r->nlive + live])
    for (long root = 0; root < n; root++) {
        if (!BAD(root) || idx[root] >= 0) continue;
        call[cs++] = root; idx[root] = low[root] = counter++; pos[root] = r->estart[root];
        stack[sp++] = root; on[root] = 1;
        while (cs) {
            long v = call[cs - 1];
            if (pos[v] < r->estart[v + 1]) {
                long w = r->eto[pos[v]++];
                if (!BAD(w)) continue;
                if (idx[w] < 0) {
                    idx[w] = low[w] = counter++; pos[w] = r->estart[w];
                    stack[sp++] = w; on[w] = 1; call[cs++] = w;
                } else if (on[w] && idx[w] < low[v]) low[v] = idx[w];
                continue;
            }
            cs--;
            if (cs && low[v] < low[call[cs - 1]]) low[call[cs - 1]] = low[v];
            if (low[v] != idx[v]) continue;
            long size = 0, first = v, top = sp;
            do { long w = stack[--top]; comp[w] = v; size++; if (w < first) first = w; } while (stack[top] != v);
            if (firsts && (size > 1 || r->renamed[v])) {
                /* reduced, and a run may go round its orbits: out to be unfolded */
                firsts[*ncomps] = first; sizes[(*ncomps)++] = size;
                for (long t = sp - 1; t >= top; t--) { members[(*nmembers)++] = stack[t]; on[stack[t]] = 0; }
                sp = top;
                continue;
            }
            memset(cnt, 0, sizeof cnt); memset(inside, 0, sizeof inside);
            for (long t = top; t < sp; t++) {
                long u = stack[t];
                for (long e = r->estart[u]; e < r->estart[u + 1]; e++) {
                    cnt[r->emv[e]]++;
                    if (r->eto[e] < n && comp[r->eto[e]] == v) inside[r->emv[e]] = 1;
                }
                on[u] = 0;
            }
            sp = top;
            int escapes = 0;
            for (int j = 0; j < NM; j++) if (fair[j] && cnt[j] == size && !inside[j]) escapes = 1;
            if (!escapes && (found < 0 || first < found)) { found = first; root_of_found = v; }
        }
    }
#undef BAD
    if (found >= 0 && members && !firsts) {
        long k = 0;
        for (long w = 0; w < n; w++) if (comp[w] == root_of_found) members[k++] = w;
        *nmembers = k;
    }
out:
    free(idx); free(low); free(stack); free(call); free(pos); free(comp); free(on);
    return found;
}

/* the edges of state v: up to cap (move row, successor) pairs; returns how many it has */
long nb_edges(void *rp, long v, int *mv, int *to, long cap) {
    R *r = rp;
    long k = 0;
    for (long e = r->estart[v]; e < r->estart[v + 1] && k < cap; e++, k++) {
        mv[k] = r->emv[e]; to[k] = r->eto[e];
    }
    return r->estart[v + 1] - r->estart[v];
}

/* the index of the state kept for packed state s (canon applied), or -1 when none is */
long nb_find(void *rp, const char *s) {
    R *r = rp;
    sc c[NV];
    canon((const sc *)s, c);
    return find_hashed(r, c, hash_of(c));
}

/* the first state (least index) from which no state where liveness goal `live` holds is
   reachable over the kept edges (backward reachability from the goal states), and how many
   such states there are into count; -1: none, -2: no memory */
long nb_reach(void *rp, int live, long *count) {
    R *r = rp;
    long n = r->n, found = -1;
    long *start = calloc((size_t)n + 2, sizeof(long)), *from = malloc((r->ne + 1) * sizeof(long));
    long *stack = malloc((n + 1) * sizeof(long));
    unsigned char *seen = malloc((size_t)n + 1);
    if (!start || !from || !stack || !seen) { found = -2; goto out; }
    for (long v = 0; v < r->head; v++)
        for (long e = r->estart[v]; e < r->estart[v + 1]; e++) start[r->eto[e] + 2]++;
    for (long v = 0; v < n; v++) start[v + 2] += start[v + 1];
    for (long v = 0; v < r->head; v++)
        for (long e = r->estart[v]; e < r->estart[v + 1]; e++) from[start[r->eto[e] + 1]++] = v;
    long sp = 0;
    for (long v = 0; v < n; v++) {
        seen[v] = r->goal[v * r->nlive + live];
        if (seen[v]) stack[sp++] = v;
    }
    while (sp) {
        long v = stack[--sp];
        for (long e = start[v]; e < start[v + 1]; e++)
            if (!seen[from[e]]) { seen[from[e]] = 1; stack[sp++] = from[e]; }
    }
    *count = 0;
    for (long v = 0; v < n; v++) if (!seen[v]) { if (found < 0) found = v; ++*count; }
out:
    free(start); free(from); free(stack); free(seen);
    return found;
}

/* the first state (least index) where liveness goal `live` does not hold and no move changes
   the state (none at all, or each to the state itself), and how many such states there are
   into count; -1: none */
long nb_stuck(void *rp, int live, long *count) {
    R *r = rp;
    long found = -1;
    *count = 0;
    for (long v = 0; v < r->n; v++)
        if (!r->goal[v * r->nlive + live] && !r->changed[v]) { if (found < 0) found = v; ++*count; }
    return found;
}

static void free_workers(R *r);

void nb_free(void *rp) {
    R *r = rp;
    if (!r) return;
    free(r->st); free(r->parent); free(r->pmove); free(r->depth); free(r->hash);
    free(r->levels); free(r->estart); free(r->eto); free(r->emv); free(r->goal); free(r->changed); free(r->renamed);
    free_workers(r);
    free(r);
}
"""
    + PARALLEL
)
