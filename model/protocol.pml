/*
 * jobtrail's operation protocol, for SPIN (model/README.md says what is modelled, what is
 * abstracted away, and how to run it). One operation, NW workers whose clocks read up to
 * D seconds off the ledger's, crashes at every step, a provider that may lose any answer,
 * list a new job late (within its declared window V), and answer a cancel while the job
 * finishes. Every move of the local state goes through move(), which refuses a move the
 * transition table (below, the same as core/states.py's TRANSITIONS: a test compares them)
 * does not list with that evidence.
 *
 * Switches (spin -DNAME):
 *   WORKER_CLOCKS     create_sent_at written on the settling worker's clock and the
 *                     window judged on the looking worker's clock (issue 36's High break).
 *                     SPIN must find a second remote job.
 *   JUDGED_AT_ANSWER  a miss judged when its answer is recorded rather than when the
 *                     lookup was sent. SPIN must find a second remote job.
 *                     Today's code (core/apply.py _on_found) is both switches at once.
 *   NO_MAY_SEND       no core/leases.may_send check before a call with an effect: SPIN
 *                     must find a call sent under a lease that may have lapsed.
 *   (none of these)   the design: the ledger's clock, a miss judged at the lookup's
 *                     recorded intent. SPIN must find no error.
 */

#define NW 2            /* workers (the provider and init below name each one) */
/* Time in ticks. Only the order of these bounds matters to the rules, so the smallest
   integers that keep it do (a larger set only makes the search longer). */
#define D 1             /* a worker's clock reads at most D off the ledger's */
#define V 2             /* the provider's visibility window (absent_after) */
#define CT 1            /* the call timeout: a request lands within CT of being sent */
#define MARGIN 1        /* worker/runner.py RENEW_MARGIN (1 s beside a 30 s timeout) */
#define LEASE 2         /* the worker's lease (--lease) */
#define LEFF 3          /* the effect lease: max(LEASE, 2 * CT + MARGIN) */

/* Local states: the names and order of core/states.py's State. */
#define CREATE_PENDING 0
#define CREATE_UNKNOWN 1
#define RECONCILIATION 2
#define ACCEPTED 3
#define OBSERVING 4
#define CANCEL_REQUESTED 5
#define CANCELLING 6
#define RESULT_COLLECTING 7
#define SUCCEEDED 8
#define FAILED 9
#define CANCELLED 10
#define RESULT_TIMED_OUT 11
#define CANCELLATION_UNCONFIRMED 12
#define RESULT_UNAVAILABLE 13
#define RESULT_VALIDATION_FAILED 14
#define NEEDS_HUMAN 15
#define ENDS_AUTOMATION(s) ((s) >= SUCCEEDED)

/* Evidence kinds: the names of core/states.py's Evidence (a bit each). */
#define EV_CREATE_ACCEPTED 0
#define EV_SYNC_RESULT 1
#define EV_CREATE_REJECTED 2
#define EV_CREATE_AMBIGUOUS 3
#define EV_RECONCILE_LOOKUP 4
#define EV_RECONCILED_FOUND 5
#define EV_ABSENCE_PROVEN 6
#define EV_CONTRACT_VIOLATION 7
#define EV_CREATE_UNPROVEN 8
#define EV_NO_RECONCILIATION 9
#define EV_OBSERVED_RUNNING 10
#define EV_OBSERVED_SUCCEEDED 11
#define EV_OBSERVED_FAILED 12
#define EV_OBSERVED_CANCELLED 13
#define EV_CANCEL_INTENT 14
#define EV_CANCEL_ACKNOWLEDGED 15
#define EV_WITHDRAWN 16
#define EV_RESULT_VALIDATED 17
#define EV_RESULT_INVALID 18
#define EV_RESULT_UNAVAILABLE 19
#define EV_CREATE_DEADLINE_PASSED 20
#define EV_RESULT_DEADLINE_PASSED 21
#define EV_CANCEL_DEADLINE_PASSED 22
#define EV_HUMAN_DECISION 23
#define EV_READS_REFUSED 24
#define EV_READS_UNREADABLE 25
#define EV_LOOKUP_CAPPED 26
#define E(x) (1 << EV_##x)

hidden int allowed[256];   /* allowed[from * 16 + to]: the evidence bits the table accepts */

inline edge(from, to, evidence) { allowed[from * 16 + to] = evidence }

inline transition_table() {
/* BEGIN TRANSITIONS: tests/unit/test_protocol_model.py compares these lines with
   core/states.py's TRANSITIONS (states, edges and evidence, both ways). */
edge(CREATE_PENDING, ACCEPTED, E(CREATE_ACCEPTED) | E(HUMAN_DECISION));
edge(CREATE_PENDING, RESULT_COLLECTING, E(SYNC_RESULT));
edge(CREATE_PENDING, FAILED, E(CREATE_REJECTED) | E(WITHDRAWN) | E(CREATE_DEADLINE_PASSED));
edge(CREATE_PENDING, CREATE_UNKNOWN, E(CREATE_AMBIGUOUS));
edge(CREATE_UNKNOWN, ACCEPTED, E(CREATE_ACCEPTED));
edge(CREATE_UNKNOWN, RESULT_COLLECTING, E(SYNC_RESULT));
edge(CREATE_UNKNOWN, RECONCILIATION, E(RECONCILE_LOOKUP) | E(CREATE_ACCEPTED) | E(CREATE_UNPROVEN));
edge(CREATE_UNKNOWN, NEEDS_HUMAN, E(CREATE_DEADLINE_PASSED) | E(NO_RECONCILIATION) | E(CREATE_UNPROVEN));
edge(RECONCILIATION, ACCEPTED, E(RECONCILED_FOUND));
edge(RECONCILIATION, CREATE_PENDING, E(ABSENCE_PROVEN));
edge(RECONCILIATION, NEEDS_HUMAN, E(CONTRACT_VIOLATION) | E(CREATE_DEADLINE_PASSED) | E(LOOKUP_CAPPED));
edge(ACCEPTED, OBSERVING, E(OBSERVED_RUNNING));
edge(RESULT_TIMED_OUT, OBSERVING, E(HUMAN_DECISION));
edge(RESULT_TIMED_OUT, CANCEL_REQUESTED, E(CANCEL_INTENT));
edge(NEEDS_HUMAN, ACCEPTED, E(HUMAN_DECISION));
edge(NEEDS_HUMAN, FAILED, E(HUMAN_DECISION));
edge(CANCEL_REQUESTED, CANCELLING, E(CANCEL_ACKNOWLEDGED));
edge(CANCELLATION_UNCONFIRMED, CANCELLING, E(HUMAN_DECISION));
edge(RESULT_VALIDATION_FAILED, FAILED, E(HUMAN_DECISION));
edge(RESULT_VALIDATION_FAILED, SUCCEEDED, E(HUMAN_DECISION));
edge(RESULT_VALIDATION_FAILED, RESULT_COLLECTING, E(HUMAN_DECISION));
edge(RESULT_COLLECTING, SUCCEEDED, E(RESULT_VALIDATED));
edge(RESULT_COLLECTING, RESULT_VALIDATION_FAILED, E(RESULT_INVALID));
edge(RESULT_COLLECTING, RESULT_UNAVAILABLE, E(RESULT_UNAVAILABLE) | E(RESULT_DEADLINE_PASSED));
edge(RESULT_COLLECTING, FAILED, E(OBSERVED_FAILED));
edge(RESULT_COLLECTING, CANCELLED, E(OBSERVED_CANCELLED));
edge(ACCEPTED, RESULT_COLLECTING, E(OBSERVED_SUCCEEDED) | E(OBSERVED_FAILED) | E(OBSERVED_CANCELLED));
edge(ACCEPTED, FAILED, E(OBSERVED_FAILED));
edge(ACCEPTED, CANCELLED, E(OBSERVED_CANCELLED));
edge(ACCEPTED, RESULT_TIMED_OUT, E(RESULT_DEADLINE_PASSED));
edge(ACCEPTED, CANCEL_REQUESTED, E(CANCEL_INTENT));
edge(ACCEPTED, NEEDS_HUMAN, E(READS_REFUSED) | E(READS_UNREADABLE));
edge(OBSERVING, RESULT_COLLECTING, E(OBSERVED_SUCCEEDED) | E(OBSERVED_FAILED) | E(OBSERVED_CANCELLED));
edge(OBSERVING, FAILED, E(OBSERVED_FAILED));
edge(OBSERVING, CANCELLED, E(OBSERVED_CANCELLED));
edge(OBSERVING, RESULT_TIMED_OUT, E(RESULT_DEADLINE_PASSED));
edge(OBSERVING, CANCEL_REQUESTED, E(CANCEL_INTENT));
edge(OBSERVING, NEEDS_HUMAN, E(READS_REFUSED) | E(READS_UNREADABLE));
edge(CANCEL_REQUESTED, CANCELLED, E(OBSERVED_CANCELLED));
edge(CANCEL_REQUESTED, RESULT_COLLECTING, E(OBSERVED_SUCCEEDED) | E(OBSERVED_FAILED) | E(OBSERVED_CANCELLED));
edge(CANCEL_REQUESTED, FAILED, E(OBSERVED_FAILED));
edge(CANCEL_REQUESTED, CANCELLATION_UNCONFIRMED, E(CANCEL_DEADLINE_PASSED));
edge(CANCELLING, CANCELLED, E(OBSERVED_CANCELLED));
edge(CANCELLING, RESULT_COLLECTING, E(OBSERVED_SUCCEEDED) | E(OBSERVED_FAILED) | E(OBSERVED_CANCELLED));
edge(CANCELLING, FAILED, E(OBSERVED_FAILED));
edge(CANCELLING, CANCELLATION_UNCONFIRMED, E(CANCEL_DEADLINE_PASSED));
/* END TRANSITIONS */
}

/* The provider's word for its job (RemoteStatus), and the answers a call can get. */
#define R_NONE 0
#define R_RUNNING 1
#define R_SUCCEEDED 2
#define R_FAILED 3
#define R_CANCELLED 4
#define A_LOST 5        /* no answer, a timeout, a reset: ambiguous */
#define A_ACCEPTED 6    /* create: a job id */
#define A_REJECTED 7    /* create: a definitive refusal; cancel: refused (already ended) */
#define A_ACK 8         /* cancel acknowledged */
#define A_FOUND 9       /* lookup: our job listed */
#define A_MISS 10       /* lookup: nothing listed under our reference */
#define A_REFUSED 11    /* status read refused, as many times as max_refused_reads */
#define A_VALID 12      /* result fetched and validated */
#define A_INVALID 13    /* result fetched, failed validation */
#define A_MISSING 14    /* result could not be fetched */

#define K_CREATE 1
#define K_LOOKUP 2      /* AttemptKind.RECONCILE: recorded like a call with an effect */
#define K_CANCEL 3
#define K_STATUS 4      /* safe reads: no intent, no effect lease */
#define K_RESULT 5

#define PENDING 1
#define DONE 2

/* ---- the ledger's record of the operation (what the store keeps) ---- */
/* Time is the ledger's clock, kept as timers that count seconds since (or until) what
   they time, saturating past the largest threshold any rule compares them with: exact for
   every rule below, and unbounded time in a finite state space. */
byte st = CREATE_PENDING;
byte owner;             /* lease_owner: 0 none, else worker + 1 */
byte lease_left;        /* lease_until - now, on the ledger's clock (0: lapsed) */
bit newest[NW];         /* the fence a worker holds is the newest (a claim raises it) */
bit inflight;           /* inflight_attempt: an intent recorded, no outcome yet */
byte sent_age;          /* now - create_sent_at on the ledger's clock (saturates) */
short sent_off;         /* the clock create_sent_at was read on: its offset */
bit cancel_intent;
bit cancel_sent;
bit job_known;          /* remote_job_id */
byte rstatus;           /* remote_status: the provider's last observed word */
bit validated;          /* ghost: the result just applied was fetched and validated */

/* ---- the provider ---- */
byte njobs;             /* remote jobs made for this operation */
byte jst;               /* the job's real status */
byte jage;              /* how long ago it was made (saturates at V: listed by then) */
bit jcancel;            /* a cancel reached it: it may now end cancelled */
byte rq_kind[NW];       /* a worker's call with an effect, on the wire */
byte rq_age[NW];        /* seconds since it was sent (saturates past CT) */
byte waited[NW];        /* seconds since the worker asked for its effect lease */
byte rq_fate[NW];       /* PENDING until it lands or is lost */
byte rq_ans[NW];
bit rq_orphan[NW];      /* its sender crashed: no one will read the answer */

/* ---- workers' clocks and crashes ---- */
short off[NW];
hidden byte i;          /* a loop index */

/* create_sent_at := now, on the clock the variant reads */
#ifdef WORKER_CLOCKS
#define STAMP_SENT(w) sent_age = 0; sent_off = off[w]
/* now(w) >= create_sent_at + V, both read on workers' clocks */
#define WINDOW_PASSED(w) (sent_age + off[w] >= V + sent_off)
#else
#define STAMP_SENT(w) sent_age = 0
#define WINDOW_PASSED(w) (sent_age >= V)
#endif
#ifdef WORKER_CLOCKS
#define SENT_MAX (V + 2 * D)
#else
#define SENT_MAX V
#endif
#define LATE (LEFF - CT - MARGIN + 1)   /* waited - 1 past this: too late to send */

/* The one way the local state changes (core/draft.py Draft.move), with the invariants
   about evidence that no table can hold. */
inline move(to, ev) {
  assert((allowed[st * 16 + to] >> ev) & 1);
  /* no `cancelled` without the provider's cancelled state */
  assert(to != CANCELLED || (job_known && jst == R_CANCELLED && rstatus == R_CANCELLED));
  /* no `succeeded` without a terminal observation and a validated result */
  assert(to != SUCCEEDED || (job_known && jst == R_SUCCEEDED && rstatus == R_SUCCEEDED
                             && validated && ev == EV_RESULT_VALIDATED));
  st = to;
  if   /* create_sent_at is read only here: forgotten elsewhere, so states merge */
  :: st != CREATE_UNKNOWN && st != RECONCILIATION -> sent_age = 0; sent_off = 0
  :: else
  fi
}

inline after_accept() {   /* core/apply.py _after_accept: a recorded cancel acts now */
  if
  :: cancel_intent -> move(CANCEL_REQUESTED, EV_CANCEL_INTENT)
  :: else
  fi
}

/* An attempt interrupted by a crash: treated as sent (core/apply.py _on_interrupted). */
inline settle_interrupted(w) {
  if
  :: st == CREATE_PENDING -> STAMP_SENT(w); move(CREATE_UNKNOWN, EV_CREATE_AMBIGUOUS)
  :: st == CREATE_UNKNOWN -> STAMP_SENT(w)      /* an interrupted lookup: _answers_create */
  :: st == CANCEL_REQUESTED -> cancel_sent = 1
  :: else
  fi;
  inflight = 0
}

/* A worker. Each atomic block is one step (a commit, a call, or both where nothing else
   can tell them apart); a crash may come before any step: the worker's memory is gone (its
   last request may still land), and it starts again from the ledger. */
#define CRASH_OR_FENCED \
  if \
  :: goto crashed \
  :: !newest[w] -> goto idle   /* LostOwnership: the lease moved on */ \
  :: newest[w] -> skip \
  fi

/* A safe read (status, result GET): renews a short lease, reads, and is recorded, all
   in the plan's step: the provider's terminal states are final, so a read applied later
   says the same. */
inline safe_read() {
    if
    :: lease_left < CT + MARGIN -> lease_left = LEASE
    :: else
    fi;
    if
    :: ans = A_LOST
    :: kind == K_STATUS -> ans = A_REFUSED
    :: kind == K_STATUS -> ans = jst; part = 0
    :: kind == K_STATUS && (jst == R_FAILED || jst == R_CANCELLED) -> ans = jst; part = 1
    :: kind == K_RESULT -> ans = A_MISSING
    :: kind == K_RESULT && jst != R_RUNNING -> ans = A_INVALID
    :: kind == K_RESULT && jst != R_RUNNING -> ans = A_VALID
    fi;
    if
    :: ans == A_LOST -> skip
    :: kind == K_STATUS ->
         assert(st == ACCEPTED || st == OBSERVING || st == CANCEL_REQUESTED || st == CANCELLING);
         if
         :: ans == A_REFUSED && (st == ACCEPTED || st == OBSERVING) -> move(NEEDS_HUMAN, EV_READS_REFUSED)
         :: ans == R_RUNNING && st == ACCEPTED -> move(OBSERVING, EV_OBSERVED_RUNNING)
         :: ans == R_SUCCEEDED -> rstatus = ans; move(RESULT_COLLECTING, EV_OBSERVED_SUCCEEDED)
         :: ans == R_FAILED && part -> rstatus = ans; move(RESULT_COLLECTING, EV_OBSERVED_FAILED)
         :: ans == R_FAILED && !part -> rstatus = ans; move(FAILED, EV_OBSERVED_FAILED)
         :: ans == R_CANCELLED && part -> rstatus = ans; move(RESULT_COLLECTING, EV_OBSERVED_CANCELLED)
         :: ans == R_CANCELLED && !part -> rstatus = ans; move(CANCELLED, EV_OBSERVED_CANCELLED)
         :: else -> skip
         fi
    :: kind == K_RESULT ->
         assert(st == RESULT_COLLECTING);
         if
         :: rstatus == R_FAILED -> move(FAILED, EV_OBSERVED_FAILED)       /* partial kept */
         :: rstatus == R_CANCELLED -> move(CANCELLED, EV_OBSERVED_CANCELLED)
         :: else ->
              if
              :: ans == A_VALID -> validated = 1; move(SUCCEEDED, EV_RESULT_VALIDATED)
              :: ans == A_INVALID -> move(RESULT_VALIDATION_FAILED, EV_RESULT_INVALID)
              :: ans == A_MISSING -> move(RESULT_UNAVAILABLE, EV_RESULT_UNAVAILABLE)
              fi
         fi
    fi;
    kind = 0; ans = 0; part = 0;
}

proctype worker(byte w) {
  byte kind, ans;
  bit part, passed;
idle:     /* nothing in memory: not even the fence it held */
  atomic {
    kind = 0; passed = 0; ans = 0; part = 0; waited[w] = 0; newest[w] = 0;
    if   /* an answer no one waits for is dropped; a request on the wire may still land */
    :: rq_fate[w] == DONE -> rq_kind[w] = 0; rq_fate[w] = 0; rq_ans[w] = 0
    :: rq_fate[w] == PENDING -> rq_orphan[w] = 1
    :: else
    fi
  };
end_claim:
  atomic {                                             /* claim_due, on the ledger's clock */
    !ENDS_AUTOMATION(st) && (owner == 0 || lease_left == 0) ->
    owner = w + 1; lease_left = LEASE;
    for (i : 0 .. NW - 1) { newest[i] = 0 }; newest[w] = 1
  };
drive:
  atomic {                                             /* plan(op, now), then act */
    CRASH_OR_FENCED;
    if
    :: ENDS_AUTOMATION(st) -> owner = 0; lease_left = 0; goto idle  /* Nothing: release */
    :: else
    fi;
    if
    :: inflight -> settle_interrupted(w); goto drive
    :: else
    fi;
    /* _settlement: a recorded cancel, else a deadline, which may be judged passed at any
       moment (no invariant may rest on when a deadline passes) */
    if
    :: st == CREATE_PENDING && cancel_intent -> move(FAILED, EV_WITHDRAWN); goto drive
    :: (st == ACCEPTED || st == OBSERVING) && cancel_intent ->
         move(CANCEL_REQUESTED, EV_CANCEL_INTENT); goto drive
    :: st == CREATE_PENDING -> move(FAILED, EV_CREATE_DEADLINE_PASSED); goto drive
    :: st == CREATE_UNKNOWN || st == RECONCILIATION ->
         move(NEEDS_HUMAN, EV_CREATE_DEADLINE_PASSED); goto drive
    :: (st == ACCEPTED || st == OBSERVING) && !cancel_intent ->
         move(RESULT_TIMED_OUT, EV_RESULT_DEADLINE_PASSED); goto drive
    :: st == CANCEL_REQUESTED || st == CANCELLING ->
         move(CANCELLATION_UNCONFIRMED, EV_CANCEL_DEADLINE_PASSED); goto drive
    :: st == RESULT_COLLECTING -> move(RESULT_UNAVAILABLE, EV_RESULT_DEADLINE_PASSED); goto drive
    :: !cancel_intent || (st != CREATE_PENDING && st != ACCEPTED && st != OBSERVING) ->
         skip                                          /* no deadline passed yet */
    fi;
    if
    :: true
    :: owner = 0; lease_left = 0; goto idle            /* Wait: release until the poll time */
    fi;
    if                                                 /* call_for */
    :: st == CREATE_PENDING -> kind = K_CREATE
    :: st == CREATE_UNKNOWN || st == RECONCILIATION -> kind = K_LOOKUP
    :: st == CANCEL_REQUESTED && !cancel_sent -> kind = K_CANCEL
    :: st == RESULT_COLLECTING -> kind = K_RESULT; safe_read(); goto drive
    :: else -> kind = K_STATUS; safe_read(); goto drive
    fi;
    /* A call with an effect: a whole effect lease, counted on the ledger's clock from
       now, and the intent recorded (begin_call). */
    lease_left = LEFF; waited[w] = 1;
    inflight = 1; passed = WINDOW_PASSED(w)
  };
  atomic {                                             /* may_send, then send */
    if
    :: goto crashed
    :: kind == K_LOOKUP || rq_fate[w] == 0 -> skip   /* (the model's wire: one per worker) */
    fi;
#ifndef NO_MAY_SEND
    if
    :: waited[w] - 1 + CT + MARGIN > LEFF -> goto idle  /* not sent; the intent stays */
    :: else -> waited[w] = 0
    fi;
#endif
    /* no call with an effect from a worker whose lease may have lapsed */
    assert(newest[w] && owner == w + 1 && lease_left > CT);
    if
    :: kind == K_LOOKUP ->
         if
         :: njobs > 0 -> ans = A_FOUND                 /* listed (at the latest V after) */
         :: !(njobs > 0 && jage >= V) -> ans = A_MISS
         :: ans = A_LOST
         fi
    :: else -> rq_kind[w] = kind; rq_age[w] = 0; rq_fate[w] = PENDING
    fi
  };
  atomic {                                             /* the answer, and finish_call */
    if
    :: goto crashed
    :: kind == K_LOOKUP
    :: kind != K_LOOKUP && rq_fate[w] == DONE ->       /* the answer, or none */
         if
         :: ans = rq_ans[w]
         :: ans = A_LOST
         fi;
         rq_kind[w] = 0; rq_age[w] = 0; rq_fate[w] = 0; rq_ans[w] = 0
    fi;
    if
    :: !newest[w] -> goto idle
    :: else
    fi;
    inflight = 0;
    if
    :: kind == K_CREATE ->
         assert(st == CREATE_PENDING);
         STAMP_SENT(w);                                /* _answers_create */
         if
         :: ans == A_ACCEPTED -> job_known = 1; move(ACCEPTED, EV_CREATE_ACCEPTED); after_accept()
         :: ans == A_REJECTED -> move(FAILED, EV_CREATE_REJECTED)
         :: ans == A_LOST -> move(CREATE_UNKNOWN, EV_CREATE_AMBIGUOUS)
         fi
    :: kind == K_LOOKUP ->
         assert(st == CREATE_UNKNOWN || st == RECONCILIATION);
         if
         :: ans == A_LOST -> skip
         :: else ->
              if
              :: st == CREATE_UNKNOWN -> move(RECONCILIATION, EV_RECONCILE_LOOKUP)
              :: else
              fi;
              if
              :: ans == A_FOUND -> job_known = 1; move(ACCEPTED, EV_RECONCILED_FOUND); after_accept()
#ifdef JUDGED_AT_ANSWER
              :: ans == A_MISS && WINDOW_PASSED(w) ->  /* judged as the answer is applied */
#else
              :: ans == A_MISS && passed ->            /* judged when the lookup was sent */
#endif
                   move(CREATE_PENDING, EV_ABSENCE_PROVEN)
              :: else -> skip                          /* proves nothing yet: look again */
              fi
         fi
    :: kind == K_CANCEL ->
         assert(st == CANCEL_REQUESTED && !cancel_sent);
         cancel_sent = 1;
         if
         :: ans == A_ACK -> move(CANCELLING, EV_CANCEL_ACKNOWLEDGED)
         :: else -> skip                               /* refused or lost: observe */
         fi
    fi;
    kind = 0; passed = 0; ans = 0;
    goto drive
  };
crashed:
  goto idle
}

inline land(w) {
  if
  :: rq_fate[w] == PENDING && rq_age[w] <= CT && rq_kind[w] == K_CREATE ->
       if
       :: assert(njobs == 0);   /* at most one remote job per operation */
          njobs = 1; jst = R_RUNNING; jage = 0; rq_ans[w] = A_ACCEPTED
       :: rq_ans[w] = A_REJECTED    /* a definitive refusal: no job */
       fi;
       rq_fate[w] = DONE
  :: rq_fate[w] == PENDING && rq_age[w] <= CT && rq_kind[w] == K_CANCEL ->
       if
       :: jst == R_RUNNING -> jcancel = 1; rq_ans[w] = A_ACK
       :: else -> rq_ans[w] = A_REJECTED
       fi;
       rq_fate[w] = DONE
  :: rq_fate[w] == PENDING -> rq_ans[w] = A_LOST; rq_fate[w] = DONE   /* never arrived */
  fi;
  if
  :: rq_orphan[w] -> rq_kind[w] = 0; rq_age[w] = 0; rq_fate[w] = 0; rq_ans[w] = 0; rq_orphan[w] = 0
  :: else
  fi
}

proctype provider() {
end:
  do
  :: atomic { njobs > 0 && jst == R_RUNNING -> jst = R_SUCCEEDED }
  :: atomic { njobs > 0 && jst == R_RUNNING -> jst = R_FAILED }
  :: atomic { njobs > 0 && jst == R_RUNNING && jcancel -> jst = R_CANCELLED }
  :: atomic { rq_fate[0] == PENDING -> land(0) }
  :: atomic { rq_fate[1] == PENDING -> land(1) }
  od
}

/* One second passes on every clock (they run at one rate; only their readings differ). */
proctype clock() {
end:
  do
  :: d_step {
       if :: lease_left > 0 -> lease_left-- :: else fi;
       if :: (st == CREATE_UNKNOWN || st == RECONCILIATION) && sent_age < SENT_MAX ->
               sent_age++
          :: else fi;
       if :: njobs > 0 && jage < V -> jage++ :: else fi;
       for (i : 0 .. NW - 1) {
         if :: waited[i] > 0 && waited[i] <= LATE -> waited[i]++ :: else fi;
         if :: rq_fate[i] == PENDING && rq_age[i] <= CT -> rq_age[i]++ :: else fi
       }
     }
  od
}


/* A person or an agent asks for a cancel, once, at any moment (ledger/deciding.py cancel). */
proctype canceller() {
  atomic {
    (!cancel_intent && st != NEEDS_HUMAN && st != CANCELLATION_UNCONFIRMED &&
     (!ENDS_AUTOMATION(st) || st == RESULT_TIMED_OUT)) ->
    cancel_intent = 1;
    if
    :: st == ACCEPTED || st == OBSERVING || st == RESULT_TIMED_OUT ->
         move(CANCEL_REQUESTED, EV_CANCEL_INTENT)
    :: else
    fi
  }
}

init {
  d_step { transition_table() };
  atomic {
#ifdef WORKER_CLOCKS
    /* Each worker's clock reads within D of the ledger's. Only the difference between two
       readings enters a rule, so worker 0 reads 0 and worker 1 anything within 2 * D
       (the largest gaps are searched first). */
    if :: off[1] = 2 * D :: off[1] = -2 * D :: off[1] = D :: off[1] = -D :: off[1] = 0 fi;
#endif
    run clock(); run provider();
#ifndef NOCANCEL
    run canceller();
#endif
    run worker(0); run worker(1)
  }
}
