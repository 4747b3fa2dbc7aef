/*
 * decide.c: every scheduling decision of the supervisor, as pure functions
 * of a schedule's row (struct sched, as sched_load() read it) and an
 * event: a due slot met by a claim (decide_slot(), then decide_claim_end()
 * for what stays pending), a due retry met by a claim (decide_retry()),
 * and a run's end (decide_finish()).  They read no clock, no database and
 * no global: claim.c and finish.c gather what a decision needs, call it,
 * and write what it says.  tests/check_decide.c walks their tables.
 */
#include "cronvisord.h"

void
decide_walk_init(struct claim_walk *w)
{
	*w = (struct claim_walk){0, CV_NEVER, CV_NEVER};
}

/*
 * What a claim does with a due slot of plan (catch-up already applied by
 * slot_plan()), given the runs of s in flight before the claim
 * (s->running), the runs this claim started for it so far (w->fired) and
 * the room left: to the claim, and to the schedule's owner.  A buffered or
 * held slot is noted in *w; ACT_HOLD and ACT_WAIT_OWNER end the plan.
 */
enum slot_act
decide_slot(const struct sched *s, struct claim_walk *w, int64_t slot,
    const struct claim_room *room)
{
	int64_t busy = s->running + w->fired;
	int once = s->tm.kind == SCHED_KIND_ONCE;

	/*
	 * total_repeats successful runs end a schedule.  With as many runs
	 * in flight as it still needs, it starts no more (overlap allow, or
	 * catch_up all, would run past the count) and skips no slot: the
	 * slots after them exist only should one of them fail, and then its
	 * retry comes first and the catch-up policy deals with them after.
	 */
	if (s->pol.total_repeats > 0 && !once && busy > 0 &&
	    s->repeat + busy >= s->pol.total_repeats) {
		w->held = slot;
		return ACT_HOLD;
	}
	/*
	 * skip looks only at runs of earlier claims: the slots of one plan
	 * are what the catch-up policy chose to run (catch_up: all), and
	 * skipping them for a sibling fired a moment ago would make `all`
	 * mean `latest` under the default overlap policy.  A once schedule's
	 * only slot can meet a run in flight only when that run was
	 * triggered; skipping it would leave the schedule active with
	 * nothing due, forever: it waits for the run instead.
	 */
	if (s->running > 0 && s->overlap == SCHEDULE_OVERLAP_SKIP && !once)
		return ACT_SKIP;
	if (busy > 0 && (s->overlap == SCHEDULE_OVERLAP_BUFFER_ONE || once)) {
		w->buffered = slot;
		return ACT_BUFFER;
	}
	/*
	 * The slots a plan has left run one after the other (catch_up: all)
	 * unless the overlap policy is allow; nor may a claim start more runs
	 * than it has room for.  The first slot not fired stays pending; the
	 * next plan, when the run ends or at the next claim, starts from it.
	 */
	if ((w->fired > 0 && s->overlap != SCHEDULE_OVERLAP_ALLOW) ||
	    room->runs <= 0) {
		w->held = slot;
		return ACT_HOLD;
	}
	/*
	 * The owner has as many runs in flight as it may: the slot is
	 * skipped, as overlap skips it, with why; a once schedule's only
	 * slot waits instead (see above).
	 */
	if (room->owner <= 0)
		return once ? ACT_WAIT_OWNER : ACT_SKIP_OWNER;
	return ACT_FIRE;
}

/*
 * When the slot after `slot` should start: the slot, plus the schedule's
 * deterministic jitter (never past the slot after it).
 */
int64_t
decide_start(const struct sched *s, int64_t slot)
{
	struct slot nx;

	if (slot == CV_NEVER || s->jitter <= 0)
		return slot;
	return slot +
	    slot_jitter(s->id, slot,
	        slot_next(&s->tm, slot, &nx) ? nx.at : CV_NEVER, s->jitter);
}

/*
 * The schedule's pending item once the claim went through plan p: a
 * buffered slot waits for the run in flight (next_run_at NULL); a held
 * slot is due again when a run ends, or at once when none is in flight
 * (the claim ran out of room); an `anchor: completion` schedule that
 * fired has nothing due until its run ends; else the plan's next slot.
 */
void
decide_claim_end(const struct sched *s, const struct claim_walk *w,
    const struct slot_plan *p, struct claim_next *out)
{
	if (w->buffered != CV_NEVER) {
		out->next_run = CV_NEVER;
		out->next_slot = w->buffered;
	} else if (w->held != CV_NEVER) {
		out->next_run =
		    w->fired > 0 || s->running > 0 ? CV_NEVER : w->held;
		out->next_slot = w->held;
	} else if (s->anchor_completion && w->fired > 0) {
		out->next_run = out->next_slot = CV_NEVER;
	} else {
		out->next_run = decide_start(s, p->next);
		out->next_slot = p->next;
	}
}

/*
 * What a claim does with a due retry (a retries row): it starts when the
 * claim has room and the owner too; it waits OWNER_WAIT_SECONDS when the
 * owner is at its limit (a retry is never skipped); it stays due for the
 * next claim when this one is full.
 */
enum slot_act
decide_retry(const struct claim_room *room)
{
	if (room->runs <= 0)
		return ACT_HOLD;
	if (room->owner <= 0)
		return ACT_WAIT_OWNER;
	return ACT_FIRE;
}

/*
 * The schedule's next state after the end e of one of its slot runs
 * (s active; v what finish.c read about its retry chains).  A success or
 * a skip goes on from where the schedule stands: the claim already moved
 * next_run_at to the next slot, except after a retry chain (resume at the
 * first slot after the latest recorded one; the catch-up policy deals with
 * the slots that passed), for a buffered slot (due now that the run
 * ended) and for `anchor: completion` (an interval from now).  A failure
 * with retries left queues a retry of its own slot (a retries row), so
 * that runs of several slots in flight (`overlap: allow`) that fail keep
 * one retry chain each; while any chain waits or runs, no new slot starts.
 */
void
decide_finish(const struct sched *s, const struct run_end *e,
    const struct finish_view *v, struct next_state *ns)
{
	struct transition tr;

	retry_next(&s->pol, s->repeat, e->attempt,
	    run_status_outcome(e->status), e->retryable, &tr);
	*ns = (struct next_state){.status = "active",
	    .repeat = tr.repeat,
	    .retry = s->retry,
	    .retry_pending = s->retry_pending,
	    .next_slot = s->next_slot_at,
	    .next_run = s->next_run_at,
	    .counts_run = tr.counts_run,
	    .counts_error = tr.counts_error,
	    .error = e->status == RUN_SUCCEEDED ? "" : e->error,
	    .delay = -1,
	    .retry_slot = CV_NEVER};
	switch (tr.step) {
	case STEP_NEXT:
		/*
		 * A retry chain of this or another slot goes on: a first
		 * attempt that ends meanwhile, or the end of one chain while
		 * another waits or runs, moves nothing.
		 */
		if (s->retry_pending && (e->attempt == 0 || v->others > 0))
			break;
		if (e->attempt > 0) { /* the end of the last retry chain */
			ns->retry = 0;
			ns->retry_pending = 0;
		}
		if (s->anchor_completion) {
			ns->delay = s->tm.interval;
			ns->slot_too = 1;
		} else if (e->attempt > 0) {
			struct slot nx;
			int64_t from = v->last != CV_NEVER && v->last > e->slot
			    ? v->last
			    : e->slot;

			/*
			 * Not simply the slot after the retried one: while
			 * its first attempt ran, later slots were claimed
			 * (skipped, overlap: skip; run, overlap: allow), and
			 * their rows stand.  Planning from one of them again
			 * would lose the missed row that starts there to the
			 * unique (schedule, slot, attempt), and the slots it
			 * counts.
			 */
			ns->next_slot = ns->next_run =
			    slot_next(&s->tm, from, &nx) ? nx.at : CV_NEVER;
		} else if (s->next_run_at == CV_NEVER &&
		    s->next_slot_at != CV_NEVER && s->next_slot_at > e->slot) {
			ns->next_run = s->next_slot_at; /* the buffered slot */
		}
		break;
	case STEP_RETRY:
		ns->retry = tr.retry;
		ns->retry_pending = 1;
		ns->queue = 1;
		ns->retry_slot = e->slot;
		ns->retry_repeat = e->repeat;
		/* An HTTP Retry-After the target gave: never sooner. */
		ns->retry_delay =
		    e->retry_after > tr.delay ? e->retry_after : tr.delay;
		ns->from_retries = 1;
		break;
	case STEP_DONE:
	case STEP_DEAD:
		/* The retries rows of other slots go with the status. */
		ns->status = tr.step == STEP_DONE ? "done" : "dead";
		ns->retry = tr.retry;
		ns->next_slot = ns->next_run = CV_NEVER;
		ns->retry_pending = 0;
		break;
	}
	if (e->status == RUN_INTERRUPTED)
		ns->error = NULL;
}
