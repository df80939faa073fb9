/* edgenn host thread pool: persistent pinned workers, one C call per layer run.
 *
 * A layer run ("job") is a list of tasks. Task t computes the output partitions
 * [begin, end) of one operator through the shared kernel ABI
 *
 *   void <name>_run(const float *in, const float *weights_packed, const float *bias,
 *                   float *out, float *scratch, int32_t part_begin, int32_t part_end);
 *
 * Task 0 runs on the calling thread (as in Arm Compute Library's CPPScheduler, so T threads
 * of work need only T - 1 workers and the caller never sits idle); task t >= 1 runs on worker t.
 * The call returns when every task is done: that is the per-operator barrier.
 *
 * Pinning: a task carries a CPU list; the thread running it is bound to exactly those CPUs
 * (sched_setaffinity) before it starts, and a worker keeps its binding until a later task asks
 * for another one, so a steady schedule costs no system call per layer. An empty list means
 * "unpinned": the process's own affinity mask at pool creation (the OS migrates the thread).
 *
 * The caller's affinity: task 0 binds the calling thread like any worker. With keep_bound the
 * caller keeps that binding after the call (so a network whose layers pin task 0 alike costs
 * no system call per layer either) until edgenn_pool_release_caller() or an unpinned task 0
 * gives it back its own mask; the executable releases at the end of every inference.
 * Without keep_bound the caller's own mask is restored before the call returns.
 *
 * Emulated heterogeneity: with a capacity table (capacity per CPU id, 1.0 = a big core), a
 * thread that has computed its partitions in t ns of its own CPU time on a CPU of capacity
 * c < 1 then busy-waits until it has used (1/c - 1) * t ns more, so its work costs t / c, as
 * on a core c times as fast. Design points, each measured on this project's 2-vCPU VM:
 *  - One kernel call over the task's whole range, as without emulation (spinning after
 *    each partition instead gives the same total): per-partition or per-chunk calls made the
 *    kernels' own per-call set-up (packing, transforms) cost up to 50% more CPU time, which
 *    would have made the emulated LITTLE core slower than 1/c and the unpinned baseline pay
 *    for calls a real thread does not make.
 *  - Thread CPU time, not wall time: a real LITTLE core is slower at executing, not at being
 *    preempted, so on a machine shared with other jobs their time is not multiplied by 1/c.
 *  - The busy-wait polls the cheap wall clock (vDSO) and reads the CPU-time clock (a system
 *    call, ~1.5 us in a VM) only to check the target, then spins the shortfall if it was
 *    preempted: a wait made of thousands of system calls slowed the next layer's kernel.
 *  - The capacity is that of the CPUs the thread was on when the call started and when it
 *    ended (their slowdowns averaged), so an unpinned thread (the ACL-like baseline) is slow
 *    while the OS has it on a LITTLE CPU; a migration inside one call is approximated.
 *
 * Waiting: idle workers spin for spin_ns (cheap hand-over between back-to-back layers), then
 * sleep on their own condition variable. The caller spins the same way for the last worker.
 * A "sleeping" flag checked after publishing work (both sides sequentially consistent, a
 * Dekker-style handshake) lets the waker skip the mutex when nobody sleeps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EDGENN_POOL_MAX_THREADS 256
/* Per task: work ns (wall), emulation spin ns (wall), partitions, last cpu, error,
 * work ns and emulation spin ns in thread CPU time (-1: not measured: neither emulating nor
 * asked to measure CPU time). */
#define EDGENN_STATS_PER_TASK 7

typedef void (*edgenn_kernel_fn)(const float *in, const float *weights, const float *bias,
                                 float *out, float *scratch, int32_t part_begin,
                                 int32_t part_end);

/* One layer run, shared read-only by every thread taking part. */
typedef struct {
    edgenn_kernel_fn fn;
    const float *in, *weights, *bias;
    float *out, *scratch;
    int64_t scratch_floats;  /* per task */
    const int32_t *tasks;    /* [n_tasks][4]: begin, end, cpu_offset, cpu_count */
    const int32_t *cpus;     /* CPU ids the tasks' cpu lists index into */
    const float *capacity;   /* [n_capacity] per CPU id, NULL: no emulation */
    int32_t n_capacity;
    int64_t *stats;          /* [n_tasks][EDGENN_STATS_PER_TASK], may be NULL */
    int32_t measure_cpu;     /* thread CPU time per task even when not emulating */
} edgenn_job;

typedef struct {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    _Atomic uint64_t seq;      /* bumped by the caller when it hands this worker a task */
    _Atomic int sleeping;
    int index;                 /* task index this worker runs */
    cpu_set_t bound;           /* current affinity */
    int bound_valid;
    struct edgenn_pool *pool;
} edgenn_worker;

typedef struct edgenn_pool {
    pthread_mutex_t dispatch_lock; /* one job at a time (ctypes drops the GIL) */
    pthread_mutex_t done_lock;
    pthread_cond_t done;
    _Atomic int pending;           /* worker tasks not yet finished */
    _Atomic int caller_sleeping;
    _Atomic int stop;
    const edgenn_job *job;
    int64_t spin_ns;
    cpu_set_t process_mask;        /* "unpinned" */
    int n_workers;
    edgenn_worker *workers[EDGENN_POOL_MAX_THREADS];
} edgenn_pool;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One step of a polite wait: a few pause instructions, and every 32nd step a sched_yield, so a
 * waiting thread that shares a CPU with the thread it waits for (unpinned threads on a busy
 * machine) hands the CPU over instead of burning the rest of its time slice. */
static inline void wait_step(unsigned *step) {
    for (int i = 0; i < 16; ++i) cpu_relax();
    if ((++*step & 31u) == 0) sched_yield();
}

/* Busy-wait (never sleep: an emulated slow core stays occupied) until this thread's CPU
 * time, `now_cpu` at the start, has grown by `extra` ns; returns the CPU time reached. Spins
 * on the wall clock for the remaining amount and checks the CPU clock only between rounds. */
static int64_t spin_cpu_for(int64_t now_cpu, int64_t extra) {
    const int64_t target = now_cpu + extra;
    int64_t cpu = now_cpu;
    while (cpu < target) {
        const int64_t deadline = now_ns() + (target - cpu);
        while (now_ns() < deadline)
            for (int i = 0; i < 16; ++i) cpu_relax();
        cpu = thread_cpu_ns();
    }
    return cpu;
}

static void task_mask(const edgenn_job *job, int t, const cpu_set_t *process_mask,
                      cpu_set_t *mask) {
    const int32_t *task = job->tasks + 4 * t;
    if (task[3] <= 0) {
        *mask = *process_mask;
        return;
    }
    CPU_ZERO(mask);
    for (int32_t i = 0; i < task[3]; ++i) {
        int cpu = job->cpus[task[2] + i];
        if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, mask);
    }
}

static double capacity_of(const edgenn_job *job, int cpu) {
    if (job->capacity == NULL || cpu < 0 || cpu >= job->n_capacity) return 1.0;
    double c = job->capacity[cpu];
    return (c > 0.0 && c < 1.0) ? c : 1.0;
}

/* Run task t of `job` on the current thread (already bound). */
static void run_task(const edgenn_job *job, int t) {
    const int32_t *task = job->tasks + 4 * t;
    float *scratch = job->scratch ? job->scratch + (int64_t)t * job->scratch_floats : NULL;
    const int cpu_time = job->capacity != NULL || job->measure_cpu;
    int64_t spin = 0, work_cpu = -1, spin_cpu = -1;
    const int cpu_start = sched_getcpu();
    const int64_t c0 = cpu_time ? thread_cpu_ns() : 0, t0 = now_ns();
    if (task[1] > task[0])
        job->fn(job->in, job->weights, job->bias, job->out, scratch, task[0], task[1]);
    const int64_t t1 = now_ns(), c1 = cpu_time ? thread_cpu_ns() : 0;
    const int cpu = sched_getcpu();
    if (cpu_time) {
        work_cpu = c1 - c0;
        spin_cpu = 0;
    }
    if (job->capacity != NULL) {
        const double slow = 0.5 * ((1.0 / capacity_of(job, cpu_start) - 1.0) +
                                   (1.0 / capacity_of(job, cpu) - 1.0));
        if (slow > 0.0) {
            spin_cpu = spin_cpu_for(c1, (int64_t)(slow * (double)work_cpu)) - c1;
            spin = now_ns() - t1;
        }
    }
    if (job->stats) {
        int64_t *s = job->stats + EDGENN_STATS_PER_TASK * t;
        s[0] = t1 - t0;
        s[1] = spin;
        s[2] = task[1] > task[0] ? task[1] - task[0] : 0;
        s[3] = cpu;
        s[5] = work_cpu;
        s[6] = spin_cpu;
    }
}

static int bind(cpu_set_t *current, int *valid, const cpu_set_t *want) {
    if (*valid && CPU_EQUAL(current, want)) return 0;
    if (sched_setaffinity(0, sizeof(cpu_set_t), want) != 0) return errno ? errno : EINVAL;
    *current = *want;
    *valid = 1;
    return 0;
}

/* The calling thread's binding (thread-local: any Python thread may call). */
static __thread int caller_bound;          /* we changed its affinity */
static __thread cpu_set_t caller_original; /* its own mask, restored on release */
static __thread cpu_set_t caller_current;

static int bind_caller(const cpu_set_t *want) {
    if (caller_bound && CPU_EQUAL(&caller_current, want)) return 0;
    if (!caller_bound && sched_getaffinity(0, sizeof(cpu_set_t), &caller_original) != 0)
        return errno ? errno : EINVAL;
    if (sched_setaffinity(0, sizeof(cpu_set_t), want) != 0) return errno ? errno : EINVAL;
    caller_current = *want;
    caller_bound = 1;
    return 0;
}

/* Give the calling thread back the affinity it had before its first pinned task. */
void edgenn_pool_release_caller(void) {
    if (caller_bound) {
        sched_setaffinity(0, sizeof(cpu_set_t), &caller_original);
        caller_bound = 0;
    }
}

static void finish_one(edgenn_pool *pool) {
    if (atomic_fetch_sub(&pool->pending, 1) == 1 && atomic_load(&pool->caller_sleeping)) {
        pthread_mutex_lock(&pool->done_lock);
        pthread_cond_signal(&pool->done);
        pthread_mutex_unlock(&pool->done_lock);
    }
}

static void *worker_main(void *arg) {
    edgenn_worker *w = (edgenn_worker *)arg;
    edgenn_pool *pool = w->pool;
    uint64_t seen = 0;
    for (;;) {
        int64_t give_up = now_ns() + pool->spin_ns;
        unsigned step = 0;
        while (atomic_load(&w->seq) == seen && !atomic_load(&pool->stop) && now_ns() < give_up)
            wait_step(&step);
        if (atomic_load(&w->seq) == seen && !atomic_load(&pool->stop)) {
            pthread_mutex_lock(&w->lock);
            atomic_store(&w->sleeping, 1);
            while (atomic_load(&w->seq) == seen && !atomic_load(&pool->stop))
                pthread_cond_wait(&w->wake, &w->lock);
            atomic_store(&w->sleeping, 0);
            pthread_mutex_unlock(&w->lock);
        }
        if (atomic_load(&pool->stop)) break;
        seen = atomic_load(&w->seq);
        const edgenn_job *job = pool->job;
        cpu_set_t want;
        task_mask(job, w->index, &pool->process_mask, &want);
        int err = bind(&w->bound, &w->bound_valid, &want);
        if (err == 0) {
            run_task(job, w->index);
        } else if (job->stats) {
            job->stats[EDGENN_STATS_PER_TASK * w->index + 4] = err;
        }
        finish_one(pool);
    }
    return NULL;
}

/* ------------------------------------------------------------------------------ public API */

void *edgenn_pool_create(int64_t spin_ns) {
    edgenn_pool *pool = calloc(1, sizeof(edgenn_pool));
    if (pool == NULL) return NULL;
    pthread_mutex_init(&pool->dispatch_lock, NULL);
    pthread_mutex_init(&pool->done_lock, NULL);
    pthread_cond_init(&pool->done, NULL);
    pool->spin_ns = spin_ns < 0 ? 0 : spin_ns;
    if (sched_getaffinity(0, sizeof(cpu_set_t), &pool->process_mask) != 0) {
        CPU_ZERO(&pool->process_mask);
        for (int i = 0; i < CPU_SETSIZE; ++i) CPU_SET(i, &pool->process_mask);
    }
    return pool;
}

int edgenn_pool_threads(void *handle) {
    return ((edgenn_pool *)handle)->n_workers + 1; /* workers + the caller */
}

/* Make sure workers 1 .. n_tasks - 1 exist; 0 or an errno value. */
static int grow(edgenn_pool *pool, int n_tasks) {
    while (pool->n_workers < n_tasks - 1) {
        edgenn_worker *w = calloc(1, sizeof(edgenn_worker));
        if (w == NULL) return ENOMEM;
        w->pool = pool;
        w->index = pool->n_workers + 1;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->wake, NULL);
        int err = pthread_create(&w->thread, NULL, worker_main, w);
        if (err != 0) {
            free(w);
            return err;
        }
        pool->workers[pool->n_workers++] = w;
    }
    return 0;
}

/* Run one layer: n_tasks tasks, task 0 on the calling thread. Returns 0, or an errno value
 * (a task whose CPU list cannot be bound reports it in its stats slot 4 and in the return). */
int edgenn_pool_run(void *handle, void *fn, const float *in, const float *weights,
                    const float *bias, float *out, float *scratch, int64_t scratch_floats,
                    int32_t n_tasks, const int32_t *tasks, const int32_t *cpus,
                    const float *capacity, int32_t n_capacity, int64_t *stats,
                    int32_t keep_bound, int32_t measure_cpu) {
    edgenn_pool *pool = (edgenn_pool *)handle;
    if (n_tasks < 1 || n_tasks > EDGENN_POOL_MAX_THREADS) return EINVAL;
    edgenn_job job = {(edgenn_kernel_fn)fn, in, weights, bias, out, scratch, scratch_floats,
                      tasks, cpus, capacity, n_capacity, stats, measure_cpu};
    if (stats) memset(stats, 0, sizeof(int64_t) * EDGENN_STATS_PER_TASK * (size_t)n_tasks);
    pthread_mutex_lock(&pool->dispatch_lock);
    int err = grow(pool, n_tasks);
    if (err != 0) {
        pthread_mutex_unlock(&pool->dispatch_lock);
        return err;
    }
    pool->job = &job;
    atomic_store(&pool->pending, n_tasks - 1);
    for (int t = 1; t < n_tasks; ++t) {
        edgenn_worker *w = pool->workers[t - 1];
        atomic_fetch_add(&w->seq, 1);
        if (atomic_load(&w->sleeping)) {
            pthread_mutex_lock(&w->lock);
            pthread_cond_signal(&w->wake);
            pthread_mutex_unlock(&w->lock);
        }
    }
    /* Task 0 here, on the caller bound like a worker (see "The caller's affinity"). */
    int caller_err = 0;
    if (tasks[3] > 0) {
        cpu_set_t want;
        task_mask(&job, 0, &pool->process_mask, &want);
        caller_err = bind_caller(&want);
    } else {
        edgenn_pool_release_caller();
    }
    if (caller_err == 0) run_task(&job, 0);
    else if (stats) stats[4] = caller_err;
    if (!keep_bound) edgenn_pool_release_caller();
    /* Barrier: wait for the workers. */
    int64_t give_up = now_ns() + pool->spin_ns;
    unsigned step = 0;
    while (atomic_load(&pool->pending) > 0 && now_ns() < give_up) wait_step(&step);
    if (atomic_load(&pool->pending) > 0) {
        pthread_mutex_lock(&pool->done_lock);
        atomic_store(&pool->caller_sleeping, 1);
        while (atomic_load(&pool->pending) > 0) pthread_cond_wait(&pool->done, &pool->done_lock);
        atomic_store(&pool->caller_sleeping, 0);
        pthread_mutex_unlock(&pool->done_lock);
    }
    pool->job = NULL;
    pthread_mutex_unlock(&pool->dispatch_lock);
    if (caller_err) return caller_err;
    if (stats)
        for (int t = 0; t < n_tasks; ++t)
            if (stats[EDGENN_STATS_PER_TASK * t + 4]) return (int)stats[EDGENN_STATS_PER_TASK * t + 4];
    return 0;
}

void edgenn_pool_destroy(void *handle) {
    edgenn_pool *pool = (edgenn_pool *)handle;
    if (pool == NULL) return;
    atomic_store(&pool->stop, 1);
    for (int i = 0; i < pool->n_workers; ++i) {
        edgenn_worker *w = pool->workers[i];
        pthread_mutex_lock(&w->lock);
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
    }
    for (int i = 0; i < pool->n_workers; ++i) {
        pthread_join(pool->workers[i]->thread, NULL);
        pthread_mutex_destroy(&pool->workers[i]->lock);
        pthread_cond_destroy(&pool->workers[i]->wake);
        free(pool->workers[i]);
    }
    pthread_mutex_destroy(&pool->dispatch_lock);
    pthread_mutex_destroy(&pool->done_lock);
    pthread_cond_destroy(&pool->done);
    free(pool);
}

int edgenn_pool_stats_per_task(void) { return EDGENN_STATS_PER_TASK; }
