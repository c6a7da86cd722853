// The worker loop behind worker/worker.h. Threads, each with its own database
// connection where it needs one:
//   producer (the caller's thread)  claims batches into free slots; wakes on NOTIFY, a freed slot, or the poll timer
//   slots x N                       run handlers
//   completer                       writes outcomes in batches (complete many in one transaction)
//   keeper                          workers-row heartbeat, lease extension, progress, rescue, prune
//   listener                        LISTEN for new jobs and cancellations (worker/job_listener.cpp)
// Every database error drops that thread's connection and retries with backoff,
// so the worker rides out a database restart. Tests: tests/worker/*_test.cpp.
#include "worker/worker.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "common/log.h"
#include "common/version.h"
#include "db/connection.h"
#include "db/queue.h"
#include "db/sql.h"
#include "db/workers.h"
#include "worker/job_listener.h"

namespace kforge::worker {
namespace {

std::string join_tags(const std::vector<std::string>& tags) {
  std::string out;
  for (const auto& tag : tags) out += (out.empty() ? "" : ",") + tag;
  return out;
}

using Clock = std::chrono::steady_clock;

std::string hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// What to write back for a job whose run ended.
enum class Action { complete, fail, cancelled, release, drop };

struct Finished {
  std::shared_ptr<JobContext> ctx;
  Action action = Action::fail;
  JobOutcome outcome;
  std::vector<db::CompleteHook> hooks;
  std::string progress_json;  // reported after the last progress heartbeat
};

class Worker {
 public:
  Worker(const WorkerOptions& options, const HandlerRegistry& registry, const std::atomic<bool>& stop)
      : options_(options), registry_(registry), stop_(stop), producer_link_(options.database_url) {}

  int run();

 private:
  bool register_row();
  void produce();
  void shutdown();
  void slot_loop();
  Finished run_job(const std::shared_ptr<JobContext>& ctx);
  void completer_loop();
  // Writes outcomes; returns those not written because the database is unreachable.
  std::vector<Finished> flush(std::vector<Finished> batch, db::Link& link);
  void write_one(const Finished& item, pqxx::connection& conn);
  void keeper_loop();
  void keep(db::Link& link, Clock::time_point now);
  void on_wake();
  void on_cancel(int64_t job_id);
  db::JobLease lease_of(const JobContext& ctx) const { return {ctx.job().id, worker_id_, ctx.attempt()}; }

  const WorkerOptions& options_;
  const HandlerRegistry& registry_;
  const std::atomic<bool>& stop_;
  db::Link producer_link_;
  int64_t worker_id_ = -1;

  std::mutex mutex_;
  std::condition_variable producer_cv_, slots_cv_, completer_cv_;
  std::deque<std::shared_ptr<JobContext>> ready_;                // claimed, waiting for a slot
  int running_ = 0;                                              // handlers running now
  std::deque<Finished> finished_;                                // outcomes waiting for the completer
  std::map<int64_t, std::shared_ptr<JobContext>> inflight_;      // claimed and not yet written back
  bool wake_ = false;                                            // a NOTIFY arrived
  bool slots_exit_ = false, completer_exit_ = false;
  std::atomic<bool> background_exit_{false}, stopping_{false};
  Clock::time_point next_beat_, next_extend_, next_progress_, next_rescue_, next_prune_;
};

bool Worker::register_row() {
  db::WorkerInfo info{hostname(), static_cast<int>(getpid()), options_.device, KFORGE_VERSION, options_.slots,
                      options_.capabilities};
  double backoff = 0.2;
  while (!stop_) {
    try {
      worker_id_ = db::worker_register(producer_link_.get(), info);
      log_info("worker", "registered",
               {{"worker_id", std::to_string(worker_id_)}, {"device", options_.device},
                {"capabilities", join_tags(options_.capabilities)},
                {"slots", std::to_string(options_.slots)}, {"queue", options_.queue}});
      return true;
    } catch (const std::exception& e) {
      log_warn("worker", "cannot register, retrying", {{"error", e.what()}});
      producer_link_.reset();
      auto deadline = after(backoff);
      while (!stop_ && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      backoff = std::min(backoff * 2, 5.0);
    }
  }
  return false;
}

int Worker::run() {
  if (registry_.kinds().empty()) {
    log_error("worker", "no job kinds registered");
    return 2;
  }
  if (!register_row()) return 0;
  auto now = Clock::now();
  next_beat_ = next_extend_ = next_progress_ = now;
  next_rescue_ = after(options_.rescue_seconds);
  next_prune_ = after(10);

  std::thread listener([this] {
    run_job_listener(options_.database_url, options_.queue,
                     {[this] { on_wake(); }, [this](int64_t id) { on_cancel(id); }}, background_exit_);
  });
  std::thread keeper([this] { keeper_loop(); });
  std::thread completer([this] { completer_loop(); });
  std::vector<std::thread> slots;
  for (int slot_idx = 0; slot_idx < options_.slots; ++slot_idx) slots.emplace_back([this] { slot_loop(); });

  produce();
  stopping_ = true;
  log_info("worker", "stopping: no new claims", {{"worker_id", std::to_string(worker_id_)}});
  shutdown();
  for (auto& slot : slots) slot.join();
  {
    std::lock_guard lock(mutex_);
    completer_exit_ = true;
  }
  completer_cv_.notify_all();
  completer.join();
  background_exit_ = true;
  keeper.join();
  listener.join();
  try {
    db::worker_stop(producer_link_.get(), worker_id_);
  } catch (const std::exception& e) {
    log_warn("worker", "could not mark worker stopped", {{"error", e.what()}});
  }
  log_info("worker", "stopped", {{"worker_id", std::to_string(worker_id_)}});
  return 0;
}

void Worker::on_wake() {
  {
    std::lock_guard lock(mutex_);
    wake_ = true;
  }
  producer_cv_.notify_one();
}

void Worker::on_cancel(int64_t job_id) {
  std::lock_guard lock(mutex_);
  auto found = inflight_.find(job_id);
  if (found != inflight_.end()) found->second->request_stop(StopReason::cancel_requested);
}

void Worker::produce() {
  db::ClaimRequest request;
  request.queue = options_.queue;
  request.worker_id = worker_id_;
  request.lease_seconds = options_.lease_seconds;
  request.kinds = registry_.kinds();
  request.capabilities = options_.capabilities;
  auto next_claim = Clock::now();
  double backoff = 0.1;
  // Outcomes waiting for the completer beyond this stop claiming (backpressure).
  const size_t max_backlog = static_cast<size_t>(options_.slots) * 4 + options_.complete_batch;
  // While the queue is backlogged, wait for half the slots to free before claiming
  // again: fewer, larger claims (one statement each) instead of many of one job.
  const int max_claim = options_.claim_batch > 0 ? std::min(options_.slots, options_.claim_batch) : options_.slots;
  const int refill_at = std::max(1, std::min(options_.slots / 2, max_claim));
  bool backlogged = false;
  while (!stop_) {
    int free_slots;
    {
      std::unique_lock lock(mutex_);
      free_slots = options_.slots - static_cast<int>(ready_.size()) - running_;
      bool room = free_slots >= (backlogged ? refill_at : 1) && finished_.size() < max_backlog;
      bool due = wake_ || Clock::now() >= next_claim;
      if (!room || !due) {
        // Woken by a freed slot or a NOTIFY; by the timer only when there is room
        // (else a past next_claim would make this spin); at least every 100 ms to see `stop`.
        auto wake_at = after(0.1);
        if (room) wake_at = std::min(wake_at, next_claim);
        producer_cv_.wait_until(lock, wake_at);
        continue;
      }
      wake_ = false;
    }
    request.limit = options_.claim_batch > 0 ? std::min(free_slots, options_.claim_batch) : free_slots;
    std::vector<db::Job> jobs;
    try {
      jobs = db::job_claim(producer_link_.get(), request);
      backoff = 0.1;
    } catch (const std::exception& e) {
      log_warn("worker", "claim failed, retrying", {{"error", e.what()}, {"retry_s", std::to_string(backoff)}});
      producer_link_.reset();
      next_claim = after(backoff);
      backoff = std::min(backoff * 2, 5.0);
      continue;
    }
    if (!jobs.empty()) {
      {
        std::lock_guard lock(mutex_);
        for (auto& job : jobs) {
          auto ctx = std::make_shared<JobContext>(std::move(job));
          inflight_[ctx->job().id] = ctx;
          ready_.push_back(ctx);
        }
      }
      slots_cv_.notify_all();
    }
    backlogged = static_cast<int>(jobs.size()) == request.limit;
    if (backlogged) {
      next_claim = Clock::now();  // there may be more: claim again as soon as slots free
      continue;
    }
    // Drained: sleep until the next job is due, a NOTIFY, or the poll interval.
    double wait = options_.poll_seconds;
    try {
      auto due = db::job_next_due(producer_link_.get(), options_.queue, request.kinds, request.capabilities);
      if (due) wait = std::min(wait, std::max(*due, 0.0));
      // Due now yet not claimed: other workers hold those rows, or the queue is paused.
      if (wait <= 0) wait = db::queue_is_paused(producer_link_.get(), options_.queue) ? options_.poll_seconds : 0.02;
    } catch (const std::exception& e) {
      producer_link_.reset();
      wait = std::min(wait, 1.0);
    }
    next_claim = after(wait);
  }
}

void Worker::shutdown() {
  {
    std::lock_guard lock(mutex_);
    for (auto& ctx : ready_) finished_.push_back({ctx, Action::release, {}, {}, ""});
    ready_.clear();
    slots_exit_ = true;
  }
  slots_cv_.notify_all();
  completer_cv_.notify_all();
  auto running_now = [this] {
    std::lock_guard lock(mutex_);
    return running_;
  };
  auto grace_end = after(options_.shutdown_grace_seconds);
  while (running_now() > 0 && Clock::now() < grace_end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (running_now() == 0) return;
  log_warn("worker", "grace period over: asking running jobs to stop", {{"running", std::to_string(running_now())}});
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, ctx] : inflight_) ctx->request_stop(StopReason::shutdown);
  }
  auto stop_end = after(std::max(5.0, options_.shutdown_grace_seconds));
  while (running_now() > 0 && Clock::now() < stop_end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (running_now() == 0) return;
  // A handler that ignores cancellation cannot be joined: give its jobs back and
  // leave without running destructors under it.
  log_error("worker", "handlers ignored the stop request; releasing their jobs and exiting",
            {{"running", std::to_string(running_now())}});
  try {
    db::Link link(options_.database_url);
    std::lock_guard lock(mutex_);
    for (auto& [id, ctx] : inflight_) db::job_release(link.get(), lease_of(*ctx));
  } catch (const std::exception& e) {
    log_error("worker", "could not release jobs; the rescuer will", {{"error", e.what()}});
  }
  std::_Exit(3);
}

void Worker::slot_loop() {
  for (;;) {
    std::shared_ptr<JobContext> ctx;
    {
      std::unique_lock lock(mutex_);
      slots_cv_.wait(lock, [this] { return !ready_.empty() || slots_exit_; });
      if (ready_.empty()) return;
      ctx = std::move(ready_.front());
      ready_.pop_front();
      ++running_;
    }
    Finished finished = run_job(ctx);
    {
      std::lock_guard lock(mutex_);
      --running_;
      finished_.push_back(std::move(finished));
    }
    completer_cv_.notify_one();
    producer_cv_.notify_one();
  }
}

Finished Worker::run_job(const std::shared_ptr<JobContext>& ctx) {
  Finished finished{ctx, Action::fail, {}, {}, ""};
  const db::Job& job = ctx->job();
  if (ctx->stop_reason() == StopReason::cancel_requested) {  // cancelled while it waited for a slot
    finished.action = Action::cancelled;
    finished.outcome = JobOutcome::fail("cancelled before it started", false);
    return finished;
  }
  const JobHandler* handler = registry_.find(job.kind);
  if (!handler) {
    finished.outcome = JobOutcome::fail("no handler for kind '" + job.kind + "' on this worker", false);
    return finished;
  }
  auto started = Clock::now();
  try {
    finished.outcome = (*handler)(*ctx);
  } catch (const std::exception& e) {
    finished.outcome = JobOutcome::fail(std::string("handler threw: ") + e.what(), true);
  } catch (...) {
    finished.outcome = JobOutcome::fail("handler threw a non-standard exception", true);
  }
  finished.hooks = ctx->take_hooks();
  finished.progress_json = ctx->take_progress();
  StopReason reason = ctx->stop_reason();
  if (finished.outcome.success) {
    finished.action = Action::complete;  // finished work is kept even if a cancel arrived late
  } else if (reason == StopReason::cancel_requested) {
    finished.action = Action::cancelled;
  } else if (reason == StopReason::shutdown) {
    finished.action = Action::release;
  } else if (reason == StopReason::lease_lost) {
    finished.action = Action::drop;
  } else {
    finished.action = Action::fail;
  }
  log_debug("worker", "job ran",
            {{"job_id", std::to_string(job.id)}, {"kind", job.kind}, {"attempt", std::to_string(job.attempt)},
             {"ok", finished.outcome.success ? "true" : "false"},
             {"ms", std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count())}});
  return finished;
}

void Worker::completer_loop() {
  db::Link link(options_.database_url);
  double backoff = 0.1;
  std::optional<Clock::time_point> give_up;  // set once shutting down with the database away
  for (;;) {
    std::vector<Finished> batch;
    {
      std::unique_lock lock(mutex_);
      completer_cv_.wait_for(lock, std::chrono::milliseconds(100),
                             [this] { return !finished_.empty() || completer_exit_; });
      if (finished_.empty()) {
        if (completer_exit_) return;
        continue;
      }
      size_t take = std::min(finished_.size(), static_cast<size_t>(std::max(1, options_.complete_batch)));
      for (size_t item_idx = 0; item_idx < take; ++item_idx) {
        batch.push_back(std::move(finished_.front()));
        finished_.pop_front();
      }
    }
    std::vector<int64_t> written;
    for (const auto& item : batch) written.push_back(item.ctx->job().id);
    std::vector<Finished> left = flush(std::move(batch), link);
    {
      std::lock_guard lock(mutex_);
      for (const auto& item : left) {
        written.erase(std::find(written.begin(), written.end(), item.ctx->job().id));
      }
      for (int64_t id : written) inflight_.erase(id);
      for (auto item = left.rbegin(); item != left.rend(); ++item) finished_.push_front(std::move(*item));
    }
    producer_cv_.notify_one();
    if (left.empty()) {
      backoff = 0.1;
      continue;
    }
    bool exiting;
    {
      std::lock_guard lock(mutex_);
      exiting = completer_exit_;
    }
    if (exiting && !give_up) give_up = after(15);
    if (give_up && Clock::now() > *give_up) {
      std::lock_guard lock(mutex_);
      log_error("worker", "database unreachable at shutdown: leaving outcomes to the rescuer",
                {{"jobs", std::to_string(finished_.size())}});
      finished_.clear();
      return;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff = std::min(backoff * 2, 5.0);
  }
}

std::vector<Finished> Worker::flush(std::vector<Finished> batch, db::Link& link) {
  // Completions go together in one transaction; everything else one by one.
  std::vector<size_t> completes;
  for (size_t item_idx = 0; item_idx < batch.size(); ++item_idx) {
    if (batch[item_idx].action == Action::complete) completes.push_back(item_idx);
  }
  std::vector<bool> done(batch.size(), false);
  if (completes.size() > 1) {
    std::vector<db::Completion> completions;
    for (size_t item_idx : completes) {
      const Finished& item = batch[item_idx];
      db::Completion completion{lease_of(*item.ctx), item.outcome.result_json, {}, item.progress_json};
      if (!item.hooks.empty()) {
        completion.hook = [hooks = item.hooks](pqxx::transaction_base& txn) {
          for (const auto& hook : hooks) hook(txn);
        };
      }
      completions.push_back(std::move(completion));
    }
    try {
      auto completed = db::job_complete_many(link.get(), worker_id_, completions);
      for (size_t pos = 0; pos < completes.size(); ++pos) {
        done[completes[pos]] = true;
        if (!completed[pos])
          log_warn("worker", "completion refused: lease lost",
                   {{"job_id", std::to_string(batch[completes[pos]].ctx->job().id)}});
      }
    } catch (const std::exception& e) {
      if (db::is_connection_error(e, link.healthy())) {
        link.reset();
        return batch;
      }
      // A hook failed: fall through and write each one alone so only that job fails.
      log_warn("worker", "batched completion failed, completing one by one", {{"error", e.what()}});
    }
  }
  std::vector<Finished> left;
  for (size_t item_idx = 0; item_idx < batch.size(); ++item_idx) {
    if (done[item_idx]) continue;
    if (!left.empty()) {  // the database is away: keep the rest for later, in order
      left.push_back(std::move(batch[item_idx]));
      continue;
    }
    try {
      write_one(batch[item_idx], link.get());
    } catch (const std::exception& e) {
      if (db::is_connection_error(e, link.healthy())) {
        link.reset();
        left.push_back(std::move(batch[item_idx]));
        continue;
      }
      log_error("worker", "could not write job outcome; the rescuer will retry it",
                {{"job_id", std::to_string(batch[item_idx].ctx->job().id)}, {"error", e.what()}});
    }
  }
  return left;
}

void Worker::write_one(const Finished& item, pqxx::connection& conn) {
  db::JobLease lease = lease_of(*item.ctx);
  std::string id = std::to_string(lease.job_id);
  if (item.action != Action::complete && !item.progress_json.empty()) {
    try {
      db::job_heartbeat(conn, lease, options_.lease_seconds, item.progress_json);
    } catch (const std::invalid_argument&) {  // a handler's malformed progress is not worth failing over
    }
  }
  switch (item.action) {
    case Action::complete: {
      db::CompleteHook hook;
      if (!item.hooks.empty()) {
        hook = [&item](pqxx::transaction_base& txn) {
          for (const auto& one : item.hooks) one(txn);
        };
      }
      try {
        if (!db::job_complete(conn, lease, item.outcome.result_json, hook, item.progress_json))
          log_warn("worker", "completion refused: lease lost", {{"job_id", id}});
      } catch (const std::exception& e) {
        if (db::is_connection_error(e, conn.is_open())) throw;
        // The result or a completion hook was refused: this attempt fails instead.
        db::job_fail(conn, lease, std::string("completion failed: ") + e.what(), true, options_.backoff);
      }
      return;
    }
    case Action::fail: {
      auto result = db::job_fail(conn, lease, item.outcome.error, item.outcome.retryable, options_.backoff);
      if (!result.lease_held) log_warn("worker", "failure not recorded: lease lost", {{"job_id", id}});
      return;
    }
    case Action::cancelled:
      db::job_cancelled(conn, lease, item.outcome.error);
      return;
    case Action::release:
      db::job_release(conn, lease);
      return;
    case Action::drop:
      log_warn("worker", "job stopped after losing its lease", {{"job_id", id}});
      return;
  }
}

void Worker::keeper_loop() {
  db::Link link(options_.database_url);
  bool was_down = false;
  while (!background_exit_) {
    try {
      keep(link, Clock::now());
      if (was_down) log_info("worker", "reconnected", {{"worker_id", std::to_string(worker_id_)}});
      was_down = false;
    } catch (const std::exception& e) {
      if (!was_down) log_warn("worker", "database error, reconnecting", {{"error", e.what()}});
      was_down = true;
      link.reset();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void Worker::keep(db::Link& link, Clock::time_point now) {
  std::vector<std::shared_ptr<JobContext>> jobs;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, ctx] : inflight_) jobs.push_back(ctx);
  }
  if (now >= next_beat_) {
    std::vector<int64_t> ids;
    for (auto& ctx : jobs) ids.push_back(ctx->job().id);
    std::string state = stopping_ ? "stopping" : (jobs.empty() ? "idle" : "busy");
    pqxx::work txn(link.get());
    txn.exec_params0(db::sql("worker_heartbeat_running"), worker_id_, state, db::sql_bigint_array(ids));
    txn.commit();
    next_beat_ = after(options_.heartbeat_seconds);
  }
  auto apply = [](JobContext& ctx, const db::HeartbeatResult& beat) {
    if (!beat.lease_held) ctx.request_stop(StopReason::lease_lost);
    else if (beat.cancel_requested) ctx.request_stop(StopReason::cancel_requested);
  };
  if (now >= next_extend_) {
    std::vector<db::JobLease> leases;
    for (auto& ctx : jobs) leases.push_back(lease_of(*ctx));
    auto beats = db::job_extend_leases(link.get(), worker_id_, leases, options_.lease_seconds);
    for (size_t job_idx = 0; job_idx < jobs.size(); ++job_idx) apply(*jobs[job_idx], beats[job_idx]);
    next_extend_ = after(options_.lease_seconds / 3);
  }
  if (now >= next_progress_) {
    for (auto& ctx : jobs) {
      std::string progress = ctx->take_progress();
      if (progress.empty()) continue;
      try {
        apply(*ctx, db::job_heartbeat(link.get(), lease_of(*ctx), options_.lease_seconds, progress));
      } catch (const std::invalid_argument& e) {
        log_warn("worker", "progress dropped", {{"job_id", std::to_string(ctx->job().id)}, {"error", e.what()}});
      }
    }
    next_progress_ = after(options_.progress_seconds);
  }
  bool elected = false;
  if (now >= next_rescue_) {
    next_rescue_ = after(options_.rescue_seconds);
    auto rescued = db::job_rescue(link.get(), options_.backoff);
    elected = rescued.elected;
    if (rescued.retried + rescued.discarded + rescued.cancelled > 0) {
      log_info("worker", "rescued jobs with lapsed leases",
               {{"retried", std::to_string(rescued.retried)}, {"discarded", std::to_string(rescued.discarded)},
                {"cancelled", std::to_string(rescued.cancelled)}});
    }
    if (elected && options_.dead_after_seconds > 0) {
      auto dead = db::worker_mark_dead(link.get(), options_.dead_after_seconds);
      if (dead > 0) log_warn("worker", "marked silent workers dead", {{"count", std::to_string(dead)}});
    }
  }
  // Only the elected maintainer prunes (it scans the finished jobs).
  if (options_.prune_retention_seconds > 0 && elected && now >= next_prune_) {
    next_prune_ = after(60);
    auto pruned = db::job_prune(link.get(), options_.prune_retention_seconds);
    if (pruned > 0) log_info("worker", "pruned finished jobs", {{"deleted", std::to_string(pruned)}});
  }
}

}  // namespace

int run_worker(const WorkerOptions& options, const HandlerRegistry& registry, const std::atomic<bool>& stop) {
  Worker worker(options, registry, stop);
  return worker.run();
}

int run_worker(const WorkerOptions& options, const std::atomic<bool>& stop) {
  static const HandlerRegistry registry = default_registry();
  return run_worker(options, registry, stop);
}

}  // namespace kforge::worker
