#include "supervisor.hpp"

#include <wick/error.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>

extern char** environ;

namespace wick::conformance {

namespace {

using Clock = std::chrono::steady_clock;

// A pipe whose ends lie above fd 3 and close on exec, so that dup2 onto 0 and 3 in the child
// always clears the flag.
void make_pipe(int fds[2]) {
  int raw[2];
  if (pipe(raw) != 0) throw Error(std::string("conformance: pipe failed: ") + std::strerror(errno));
  for (int k = 0; k < 2; ++k) {
    fds[k] = fcntl(raw[k], F_DUPFD_CLOEXEC, 10);
    close(raw[k]);
  }
}

struct Worker {
  pid_t pid = -1;
  int to = -1;    // its stdin
  int from = -1;  // its fd 3
  std::string buffer;
  bool ready = false;
  int current = -1;  // index of the case in flight
  Clock::time_point deadline;
};

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return std::string("worker killed by signal ") + std::to_string(sig) + " (" + strsignal(sig) +
           ")";
  }
  if (WIFEXITED(status)) return "worker exited with status " + std::to_string(WEXITSTATUS(status));
  return "worker ended";
}

// Starts the worker with stdin, fd 3, stdout and stderr (log) mapped; -1 leaves one alone.
pid_t spawn(const SupervisorOptions& o, const std::vector<std::string>& args, int stdin_fd, int fd3,
            int log_fd, int stdout_fd = -1) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (stdin_fd >= 0) posix_spawn_file_actions_adddup2(&fa, stdin_fd, 0);
  if (fd3 >= 0) posix_spawn_file_actions_adddup2(&fa, fd3, 3);
  if (stdout_fd >= 0 || log_fd >= 0)
    posix_spawn_file_actions_adddup2(&fa, stdout_fd >= 0 ? stdout_fd : log_fd, 1);
  if (log_fd >= 0) posix_spawn_file_actions_adddup2(&fa, log_fd, 2);
  std::vector<std::string> all{o.worker};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, o.worker.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw Error("conformance: cannot start " + o.worker + ": " + std::strerror(rc));
  return pid;
}

int open_log(const std::string& file) {
  if (file.empty()) return -1;
  return open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

}  // namespace

std::vector<std::string> list_backends(const SupervisorOptions& o) {
  int out[2];
  make_pipe(out);
  const int log_fd = open_log(o.log_file);
  std::vector<std::string> args = o.worker_args;
  args.push_back("--list-backends");
  // --list-backends answers on stdout: the pipe takes the place of the log there.
  const pid_t pid = spawn(o, args, -1, -1, log_fd, out[1]);
  close(out[1]);
  if (log_fd >= 0) close(log_fd);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  std::vector<std::string> names;
  const size_t start = text.rfind('[');
  const nlohmann::json j =
      nlohmann::json::parse(text.substr(start == std::string::npos ? 0 : start), nullptr, false);
  if (!j.is_array())
    throw Error("conformance: could not list the backends (" + describe_exit(status) +
                "): " + text);
  for (const auto& v : j) names.push_back(v.get<std::string>());
  return names;
}

namespace {

Clock::time_point after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// One backend's run: the queue of cases, the workers that take them one at a time, and the
// results as they arrive (or as a crash, a timeout or an expectations SKIP stands in for them).
class BackendSession {
 public:
  BackendSession(const SupervisorOptions& o, const std::string& spec,
                 const std::vector<CaseInfo>& cases)
      : o_(o), spec_(spec), cases_(cases), log_fd_(open_log(o.log_file)), args_(o.worker_args) {
    args_.push_back("--backend");
    args_.push_back(spec);
    run_.spec = spec;
    run_.name = spec;
    workers_.resize(static_cast<size_t>(std::max(1, o.jobs)));
  }
  ~BackendSession() {
    if (log_fd_ >= 0) close(log_fd_);
  }
  BackendSession(const BackendSession&) = delete;
  BackendSession& operator=(const BackendSession&) = delete;

  BackendRun run() {
    queue_cases();
    while (!pending_.empty() || busy()) {
      if (o_.stop != nullptr && *o_.stop != 0) {  // interrupted: stop every worker, keep what ran
        for (Worker& w : workers_)
          if (w.pid >= 0) stop_worker(w, true);
        return run_;
      }
      dispatch();
      if (!read_workers()) return run_;
      check_deadlines();
    }
    for (Worker& w : workers_) {
      if (w.pid < 0) continue;
      close(w.to);  // end of input: the worker exits by itself
      w.to = -1;
      stop_worker(w, false);
    }
    return run_;
  }

 private:
  // Fills in what the supervisor knows of the case, applies the expectations, adds the repro line.
  void emit(const CaseInfo& c, Result r) {
    r.backend = run_.name;
    r.id = c.id;
    r.source = c.source;
    r.op = c.op;
    if (r.dtype.empty()) r.dtype = c.dtype;
    if (o_.expectations != nullptr) {
      if (const Expectations::Entry* e = o_.expectations->match(run_.name, c.id)) {
        if (e->kind == "XFAIL") apply_xfail(*e, r);
      }
    }
    if (r.status != "PASS" && r.status != "SUPPORTED" && o_.repro) r.repro = o_.repro(spec_, c.id);
    if (o_.on_result) o_.on_result(r);
  }
  static void apply_xfail(const Expectations::Entry& e, Result& r) {
    if (r.status == "PASS") {
      r.status = "XPASS";
      r.message = "expected to fail (" + e.reason + ", " + e.where + ") but passed";
    } else if (r.status == "FAIL" || r.status == "CRASH" || r.status == "TIMEOUT") {
      r.message = r.status + ": " + r.message + " [expected: " + e.reason + "]";
      r.status = "XFAIL";
    }
  }
  // A result the supervisor writes itself: SKIP, CRASH, TIMEOUT.
  void emit_status(size_t k, const std::string& status, const std::string& message) {
    Result r;
    r.status = status;
    r.message = message;
    emit(cases_[k], r);
  }

  void queue_cases() {
    for (size_t k = 0; k < cases_.size(); ++k) {
      const Expectations::Entry* e =
          o_.expectations != nullptr ? o_.expectations->match(run_.name, cases_[k].id) : nullptr;
      // SKIP entries are matched against the spec's name; the plugin's own name is known only
      // after the first READY, so a by-path run matches on the spec.
      if (e != nullptr && e->kind == "SKIP") {
        emit_status(k, "SKIP", e->reason + " (" + e->where + ")");
        continue;
      }
      pending_.push_back(static_cast<int>(k));
    }
  }

  void start_worker(Worker& w) {
    int in[2], out[2];
    make_pipe(in);
    make_pipe(out);
    w.pid = spawn(o_, args_, in[0], out[1], log_fd_);
    close(in[0]);
    close(out[1]);
    w.to = in[1];
    w.from = out[0];
    w.buffer.clear();
    w.ready = false;
    w.current = -1;
    w.deadline = after(o_.startup_timeout_s);
  }
  // Closes the pipes and reaps the worker (killed first when kill_it); returns its wait status.
  static int stop_worker(Worker& w, bool kill_it) {
    if (w.pid < 0) return 0;
    if (kill_it) kill(w.pid, SIGKILL);
    if (w.to >= 0) close(w.to);
    if (w.from >= 0) close(w.from);
    int status = 0;
    waitpid(w.pid, &status, 0);
    w = Worker{};
    return status;
  }
  void fail_remaining(const std::string& why) {
    for (int k : pending_) emit_status(static_cast<size_t>(k), "CRASH", why);
    pending_.clear();
  }

  bool busy() const {
    for (const Worker& w : workers_) {
      if (w.current >= 0 || (w.pid >= 0 && !w.ready)) return true;
    }
    return false;
  }
  // Starts workers where there is work, and gives each ready, idle worker the next case.
  void dispatch() {
    for (Worker& w : workers_) {
      if (w.pid < 0 && !pending_.empty()) start_worker(w);
      if (w.pid < 0 || !w.ready || w.current >= 0 || pending_.empty()) continue;
      w.current = pending_.front();
      pending_.pop_front();
      const std::string line = "RUN " + cases_[static_cast<size_t>(w.current)].id + "\n";
      if (write(w.to, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        // The worker is gone; the read side reports how.
      }
      w.deadline = after(o_.case_timeout_s);
    }
  }

  // Waits (until the nearest deadline, at most a second) for output from the workers and takes
  // it in. False when a worker could not start the backend: the run ends there.
  bool read_workers() {
    std::vector<pollfd> fds;
    std::vector<Worker*> owners;
    const auto now = Clock::now();
    auto next_deadline = now + std::chrono::seconds(1);
    for (Worker& w : workers_) {
      if (w.pid < 0) continue;
      fds.push_back({w.from, POLLIN, 0});
      owners.push_back(&w);
      if (w.current >= 0 || !w.ready) next_deadline = std::min(next_deadline, w.deadline);
    }
    if (fds.empty()) return true;
    const int wait_ms = static_cast<int>(std::max<int64_t>(
        1, std::chrono::duration_cast<std::chrono::milliseconds>(next_deadline - now).count() + 1));
    poll(fds.data(), fds.size(), wait_ms);
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents != 0 && !read_worker(*owners[k])) return false;
    }
    return true;
  }
  bool read_worker(Worker& w) {
    char buf[65536];
    const ssize_t n = read(w.from, buf, sizeof(buf));
    if (n <= 0) {
      on_eof(w);
      return true;
    }
    // Only the new bytes are searched for line ends, and the lines taken are erased once: a long
    // line arriving in many reads (or many lines in one) costs time linear in its length.
    const size_t searched = w.buffer.size();
    w.buffer.append(buf, static_cast<size_t>(n));
    size_t start = 0, nl = searched;
    while ((nl = w.buffer.find('\n', nl)) != std::string::npos) {
      const std::string line = w.buffer.substr(start, nl - start);
      start = ++nl;
      if (line.rfind("READY ", 0) == 0) {
        if (!on_ready(w, line)) return false;  // every worker stopped, its buffer cleared
      } else if (w.current >= 0) {
        on_result_line(w, line);
      }
    }
    w.buffer.erase(0, start);
    return true;
  }
  bool on_ready(Worker& w, const std::string& line) {
    nlohmann::json j = nlohmann::json::parse(line.substr(6), nullptr, false);
    if (j.is_object() && j.value("ok", false)) {
      w.ready = true;
      startup_failures_ = 0;
      run_.ready = j;
      run_.name = j.value("backend", spec_);
      return true;
    }
    run_.error = j.is_object() ? j.value("error", std::string("worker failed to start")) : line;
    for (Worker& x : workers_) stop_worker(x, true);
    pending_.clear();
    return false;
  }
  void on_result_line(Worker& w, const std::string& line) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    Result r;
    if (j.is_object()) {
      r = Result::from_json(j);
    } else {
      r.status = "FAIL";
      r.message = "worker sent an unreadable result: " + line;
    }
    const int idx = w.current;
    w.current = -1;
    emit(cases_[static_cast<size_t>(idx)], r);
  }
  // The worker died (crash) or ended.
  void on_eof(Worker& w) {
    const int idx = w.current;
    const bool was_ready = w.ready;
    const int status = stop_worker(w, false);
    if (idx >= 0) {
      emit_status(static_cast<size_t>(idx), "CRASH",
                  describe_exit(status) + " while running this case");
    } else if (!was_ready && ++startup_failures_ >= 3) {
      fail_remaining(describe_exit(status) + " before it was ready, 3 times in a row");
    }
  }

  void check_deadlines() {
    const auto now = Clock::now();
    for (Worker& w : workers_) {
      if (w.pid < 0 || now < w.deadline) continue;
      if (w.current >= 0) {
        const int idx = w.current;
        stop_worker(w, true);
        emit_status(static_cast<size_t>(idx), "TIMEOUT",
                    "no result within " + std::to_string(o_.case_timeout_s) + " s; worker killed");
      } else if (!w.ready) {
        stop_worker(w, true);
        if (++startup_failures_ >= 3)
          fail_remaining("worker not ready within the startup timeout, 3 times in a row");
      }
    }
  }

  const SupervisorOptions& o_;
  const std::string spec_;
  const std::vector<CaseInfo>& cases_;
  const int log_fd_;
  std::vector<std::string> args_;
  BackendRun run_;
  std::deque<int> pending_;  // indices into cases_
  std::vector<Worker> workers_;
  int startup_failures_ = 0;  // in a row
};

}  // namespace

BackendRun run_backend(const SupervisorOptions& o, const std::string& spec,
                       const std::vector<CaseInfo>& cases) {
  signal(SIGPIPE, SIG_IGN);
  return BackendSession(o, spec, cases).run();
}

}  // namespace wick::conformance
