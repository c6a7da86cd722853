// kforge-bench-queue: the job queue benchmark. Runs the cases in
// bench/queue/cases.json (enqueue, burn-down with real kforge-worker processes,
// NOTIFY start latency), each on a fresh database, and writes one JSON file with
// the environment and pg_stat_statements' top statements per burn case.
//   bench/queue/run.sh            (starts a throwaway cluster, writes bench/results/queue.json)
//   kforge-bench-queue --database-url ADMIN_URL --cases FILE [--only a,b] [--out FILE]
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/subprocess.h"
#include "common/version.h"
#include "db/connection.h"
#include "db/migrations.h"
#include "db/queue.h"

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace db = kforge::db;

namespace {

std::string admin_url;
std::string bin_dir;

std::string url_with_database(const std::string& url, const std::string& database) {
  auto scheme_end = url.find("://");
  auto path_start = url.find('/', scheme_end + 3);
  auto query_start = url.find('?', scheme_end + 3);
  std::string base = url.substr(0, path_start == std::string::npos ? query_start : path_start);
  std::string query = query_start == std::string::npos ? "" : url.substr(query_start);
  return base + "/" + database + query;
}

// A fresh, migrated database for one case, with pg_stat_statements available.
// A case may set "synchronous_commit": "off" for its database (to show what the
// WAL flush per commit costs).
std::string fresh_database(const std::string& name, const json& spec) {
  {
    auto admin = db::connect(admin_url);
    pqxx::nontransaction txn(*admin);
    txn.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    txn.exec("CREATE DATABASE " + name);
    std::string commit_mode = spec.value("synchronous_commit", "");
    if (commit_mode == "off" || commit_mode == "on")
      txn.exec("ALTER DATABASE " + name + " SET synchronous_commit = " + commit_mode);
  }
  std::string url = url_with_database(admin_url, name);
  auto conn = db::connect(url);
  db::migrate(*conn);
  pqxx::nontransaction(*conn).exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  return url;
}

std::string scalar(pqxx::connection& conn, const std::string& query) {
  pqxx::nontransaction txn(conn);
  auto rows = txn.exec(query);
  return rows.empty() || rows[0][0].is_null() ? "" : rows[0][0].as<std::string>();
}

// CPU seconds (user + system) used so far by the processes `wanted(pid, ppid)`
// picks. Other helpers share this machine, so we count only our cluster's
// processes (the postmaster and its children) and our worker pids.
double cpu_seconds(const std::function<bool(long, long)>& wanted) {
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  double total = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    // After the command: field 3 state, 4 ppid, ..., 14 utime, 15 stime.
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    long ppid = 0;
    double utime = 0, stime = 0;
    for (int field_idx = 3; field_idx <= 15 && rest >> field; ++field_idx) {
      if (field_idx == 4) ppid = std::stol(field);
      if (field_idx == 14) utime = std::stod(field);
      if (field_idx == 15) stime = std::stod(field);
    }
    if (wanted(std::stol(name), ppid)) total += (utime + stime) / ticks;
  }
  return total;
}

// The postmaster of the cluster behind `conn` (the parent of our backend).
long postmaster_pid(pqxx::connection& conn) {
  long backend = std::stol(scalar(conn, "SELECT pg_backend_pid()"));
  std::ifstream in("/proc/" + std::to_string(backend) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string state, ppid;
  rest >> state >> ppid;
  return std::stol(ppid);
}

std::vector<db::JobInsert> noop_jobs(int count) {
  std::vector<db::JobInsert> jobs(count);
  for (auto& job : jobs) job.kind = "noop";
  return jobs;
}

json run_enqueue(const json& spec, const std::string& url) {
  int total = spec.at("jobs"), batch = spec.at("batch");
  auto conn = db::connect(url);
  auto jobs = noop_jobs(batch);
  auto started = Clock::now();
  if (batch == 1) {
    for (int job_idx = 0; job_idx < total; ++job_idx) db::job_insert(*conn, jobs[0]);
  } else {
    for (int done = 0; done < total; done += batch) db::job_insert_many(*conn, noop_jobs(std::min(batch, total - done)));
  }
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return {{"jobs", total}, {"batch", batch}, {"seconds", seconds}, {"jobs_per_s", total / seconds},
          {"inserted", std::stoll(scalar(*conn, "SELECT count(*) FROM jobs"))}};
}

std::vector<kforge::Subprocess> start_workers(const json& spec, const std::string& url, const std::string& tag) {
  std::vector<kforge::Subprocess> workers;
  for (int worker_idx = 0; worker_idx < spec.value("workers", 1); ++worker_idx) {
    std::vector<std::string> argv = {bin_dir + "/kforge-worker", "--database-url", url,
                                     "--slots", std::to_string(spec.value("slots", 1)),
                                     "--claim-batch", std::to_string(spec.value("claim_batch", 0)),
                                     "--complete-batch", std::to_string(spec.value("complete_batch", 1000)),
                                     "--poll-s", std::to_string(spec.value("poll_s", 1.0)),
                                     "--log-level", "warn"};
    workers.push_back(kforge::Subprocess::spawn(argv, {}, "/tmp/kforge-bench-" + tag + "-" + std::to_string(worker_idx) + ".log"));
  }
  return workers;
}

void stop_workers(std::vector<kforge::Subprocess>& workers) {
  for (auto& worker : workers) worker.signal(SIGTERM);
  for (auto& worker : workers) worker.wait_for(std::chrono::seconds(20));
}

// The statements that took the most database time since the last reset.
json top_statements(pqxx::connection& conn) {
  json out = json::array();
  pqxx::nontransaction txn(conn);
  auto rows = txn.exec(
      "SELECT regexp_replace(left(query, 160), '\\s+', ' ', 'g'), calls, round(total_exec_time::numeric, 1), "
      "round(mean_exec_time::numeric, 3), rows FROM pg_stat_statements "
      "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
      "ORDER BY total_exec_time DESC LIMIT 8");
  for (const auto& row : rows) {
    out.push_back({{"query", row[0].as<std::string>()}, {"calls", row[1].as<int64_t>()},
                   {"total_ms", row[2].as<double>()}, {"mean_ms", row[3].as<double>()}, {"rows", row[4].as<int64_t>()}});
  }
  return out;
}

json run_burn(const json& spec, const std::string& url, const std::string& name) {
  int total = spec.at("jobs");
  auto conn = db::connect(url);
  for (int done = 0; done < total; done += 5000) db::job_insert_many(*conn, noop_jobs(std::min(5000, total - done)));
  pqxx::nontransaction(*conn).exec("VACUUM ANALYZE jobs");
  pqxx::nontransaction(*conn).exec("SELECT pg_stat_statements_reset()");
  long postmaster = postmaster_pid(*conn);
  auto ours = [postmaster](long pid, long ppid) { return pid == postmaster || ppid == postmaster; };
  double pg_cpu_before = cpu_seconds(ours);
  auto started = Clock::now();
  auto workers = start_workers(spec, url, name);
  // Both probes use partial indexes, so polling costs little.
  const std::string pending =
      "SELECT EXISTS (SELECT 1 FROM jobs WHERE state IN ('available', 'scheduled', 'retryable')) OR "
      "EXISTS (SELECT 1 FROM jobs WHERE state = 'running')";
  while (scalar(*conn, pending) == "t") std::this_thread::sleep_for(std::chrono::milliseconds(200));
  double wall = std::chrono::duration<double>(Clock::now() - started).count();
  // Read before the workers stop: their backends' CPU is gone once they exit.
  double pg_cpu = cpu_seconds(ours) - pg_cpu_before;
  double worker_cpu = cpu_seconds([&workers](long pid, long) {
    for (auto& worker : workers) if (worker.pid() == pid) return true;
    return false;
  });
  stop_workers(workers);
  // Database clock: first claim to last completion, excluding process start-up.
  double busy = std::stod(scalar(*conn, "SELECT extract(epoch FROM max(finished_at) - min(attempted_at)) FROM jobs"));
  int64_t completed = std::stoll(scalar(*conn, "SELECT count(*) FROM jobs WHERE state = 'completed'"));
  json result = {{"jobs", total},
                 {"completed", completed},
                 {"workers", spec.value("workers", 1)},
                 {"slots", spec.value("slots", 1)},
                 {"claim_batch", spec.value("claim_batch", 0)},
                 {"complete_batch", spec.value("complete_batch", 1000)},
                 {"seconds_first_claim_to_last_completion", busy},
                 {"seconds_wall_including_worker_start", wall},
                 {"jobs_per_s", completed / busy},
                 {"max_attempt", std::stoi(scalar(*conn, "SELECT max(attempt) FROM jobs"))},
                 // CPU actually spent (postgres includes its background processes):
                 // a load-independent cost, since the machine is shared.
                 {"cpu_seconds_postgres", pg_cpu},
                 {"cpu_seconds_workers", worker_cpu},
                 {"cpu_ms_per_1000_jobs", 1000.0 * (pg_cpu + worker_cpu) / std::max<int64_t>(completed, 1) * 1000.0},
                 {"projected_jobs_per_s_if_2_cores_were_ours",
                  2.0 * completed / std::max(pg_cpu + worker_cpu, 1e-9)},
                 {"top_statements", top_statements(*conn)}};
  return result;
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(p / 100.0 * (values.size() - 1) + 0.5);
  return values[std::min(rank, values.size() - 1)];
}

json run_latency(const json& spec, const std::string& url, const std::string& name) {
  auto conn = db::connect(url);
  auto workers = start_workers(spec, url, name);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // registered, listening, idle
  double rate = spec.at("rate_per_s"), seconds = spec.at("seconds");
  int total = static_cast<int>(rate * seconds);
  db::JobInsert job;
  job.kind = "noop";
  auto started = Clock::now();
  for (int job_idx = 0; job_idx < total; ++job_idx) {
    std::this_thread::sleep_until(started + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(job_idx / rate)));
    db::job_insert(*conn, job);
  }
  auto deadline = Clock::now() + std::chrono::seconds(30);
  while (scalar(*conn, "SELECT count(*) FROM jobs WHERE state = 'completed'") != std::to_string(total) &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop_workers(workers);
  std::vector<double> latencies;
  pqxx::nontransaction txn(*conn);
  // created_at: the insert transaction's start; attempted_at: the claim's.
  for (const auto& row : txn.exec("SELECT extract(epoch FROM attempted_at - created_at) * 1000 FROM jobs "
                                  "WHERE attempted_at IS NOT NULL")) {
    latencies.push_back(row[0].as<double>());
  }
  if (latencies.empty()) return {{"error", "no job started"}};
  return {{"jobs", total},
          {"started", latencies.size()},
          {"rate_per_s", rate},
          {"poll_s", spec.value("poll_s", 5.0)},
          {"p50_ms", percentile(latencies, 50)},
          {"p90_ms", percentile(latencies, 90)},
          {"p99_ms", percentile(latencies, 99)},
          {"max_ms", percentile(latencies, 100)}};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

json environment() {
  json env;
  env["cpus"] = std::thread::hardware_concurrency();
  std::string cpuinfo = read_file("/proc/cpuinfo");
  auto model = cpuinfo.find("model name");
  if (model != std::string::npos) {
    auto colon = cpuinfo.find(':', model);
    env["cpu_model"] = cpuinfo.substr(colon + 2, cpuinfo.find('\n', colon) - colon - 2);
  }
  std::string loadavg = read_file("/proc/loadavg");
  env["loadavg_at_start"] = loadavg.substr(0, loadavg.find('\n'));
  std::string meminfo = read_file("/proc/meminfo");
  env["mem_total"] = meminfo.substr(0, meminfo.find('\n'));
  struct utsname uts {};
  uname(&uts);
  env["kernel"] = std::string(uts.sysname) + " " + uts.release;
  env["kforge_version"] = KFORGE_VERSION;
  auto conn = db::connect(admin_url);
  env["postgres"] = scalar(*conn, "SELECT version()");
  for (const char* setting : {"fsync", "synchronous_commit", "shared_buffers", "max_connections"}) {
    env["postgres_" + std::string(setting)] = scalar(*conn, std::string("SHOW ") + setting);
  }
  env["postgres_on_same_machine"] = true;
  return env;
}

}  // namespace

int main(int argc, char** argv) {
  kforge::Flags flags({
      {"database-url", "KFORGE_DATABASE_URL", "", "admin URL of a cluster where databases may be created"},
      {"cases", "", "bench/queue/cases.json", "case file"},
      {"only", "", "", "comma-separated case names (default: all)"},
      {"out", "", "bench/results/queue.json", "result file"},
  });
  if (auto error = flags.parse(argc, argv)) {
    std::cerr << "kforge-bench-queue: " << *error << "\n";
    return 2;
  }
  if (flags.help_requested()) {
    std::cout << flags.usage("kforge-bench-queue", "the job queue benchmark");
    return 0;
  }
  admin_url = flags.get("database-url");
  if (admin_url.empty()) {
    std::cerr << "kforge-bench-queue: --database-url is required (bench/queue/run.sh starts a cluster)\n";
    return 2;
  }
  char exe[4096] = {0};
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  bin_dir = std::string(exe, len > 0 ? len : 0);
  bin_dir = bin_dir.substr(0, bin_dir.rfind('/'));

  json cases = json::parse(read_file(flags.get("cases")), nullptr, false);
  if (!cases.is_object() || !cases.contains("cases")) {
    std::cerr << "kforge-bench-queue: cannot read cases from " << flags.get("cases") << "\n";
    return 2;
  }
  std::string only = "," + flags.get("only") + ",";
  json out;
  std::string command;
  for (int arg_idx = 0; arg_idx < argc; ++arg_idx) command += (arg_idx ? " " : "") + std::string(argv[arg_idx]);
  out["command"] = command;
  out["environment"] = environment();
  out["cases"] = json::object();
  for (const auto& spec : cases["cases"]) {
    std::string name = spec.at("name");
    if (only != ",," && only.find("," + name + ",") == std::string::npos) continue;
    std::cerr << "case " << name << " ...\n";
    std::string url = fresh_database("kforge_bench_" + name, spec);
    std::string type = spec.at("type");
    json result;
    try {
      result = type == "enqueue" ? run_enqueue(spec, url)
               : type == "burn"  ? run_burn(spec, url, name)
                                 : run_latency(spec, url, name);
    } catch (const std::exception& e) {
      std::cerr << "kforge-bench-queue: case " << name << " failed: " << e.what() << "\n";
      return 1;
    }
    std::string loadavg = read_file("/proc/loadavg");
    result["loadavg_after"] = loadavg.substr(0, loadavg.find('\n'));
    std::cerr << "  " << result.dump() << "\n";
    out["cases"][name] = result;
    std::string key = spec.value("summary", "");
    if (key == "start_latency") {
      out["start_latency_p50_ms"] = result.value("p50_ms", -1.0);
      out["start_latency_p99_ms"] = result.value("p99_ms", -1.0);
    } else if (!key.empty()) {
      out[key] = result.value("jobs_per_s", -1.0);
    }
  }
  std::ofstream(flags.get("out")) << out.dump(2) << "\n";
  std::cout << out.dump(2) << "\n";
  return 0;
}
