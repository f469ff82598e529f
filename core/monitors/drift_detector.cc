#include "core/monitors/drift_detector.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/monitors/exported_state.h"

namespace halfspace {
namespace {

absl::Status OutOfRange(absl::string_view setting, double value,
                        absl::string_view range) {
  return absl::InvalidArgumentError(
      absl::StrCat("drift.", setting, " is ", value, "; it must be ", range));
}

// Whether an ADWIN window that went from mean `before` to `window` after
// a value shrank because the mean rose.
bool Rose(bool shrank, double before, const Adwin& window) {
  return shrank && window.mean() > before;
}

}  // namespace

absl::Status CheckDriftOptions(const DriftOptions& o) {
  using Method = DriftOptions::Method;
  if (o.input != DriftOptions::Input::kMistakes &&
      (o.input != DriftOptions::Input::kLoss || o.method == Method::kDdm)) {
    return absl::InvalidArgumentError(
        "drift.input must be the mistakes or the loss, and DDM reads the "
        "mistakes");
  }
  if (o.challenge && o.method == Method::kNone) {
    return absl::InvalidArgumentError(
        "drift.challenge needs a detector: set adwin, page_hinkley or ddm");
  }
  if (o.challenge && !(o.challenge_alpha > 0 && o.challenge_alpha < 1)) {
    return OutOfRange("challenge.alpha", o.challenge_alpha, "in (0, 1)");
  }
  switch (o.method) {
    case Method::kNone:
      return absl::OkStatus();
    case Method::kAdwin:
      if (!(o.adwin_delta > 0 && o.adwin_delta < 1)) {
        return OutOfRange("adwin.delta", o.adwin_delta, "in (0, 1)");
      }
      if (o.adwin_warning_delta != 0 &&
          !(o.adwin_warning_delta > o.adwin_delta &&
            o.adwin_warning_delta < 1)) {
        return OutOfRange("adwin.warning_delta", o.adwin_warning_delta,
                          "0 (no warnings) or in (delta, 1)");
      }
      if (o.adwin_clock < 1 || o.adwin_clock > 1000000) {
        return OutOfRange("adwin.clock", static_cast<double>(o.adwin_clock),
                          "1 to 1000000");
      }
      return absl::OkStatus();
    case Method::kPageHinkley: {
      const PageHinkleyOptions& p = o.page_hinkley;
      if (p.min_instances < 1 || p.min_instances > 1000000000) {
        return OutOfRange("page_hinkley.min_instances",
                          static_cast<double>(p.min_instances),
                          "1 to 1000000000");
      }
      if (!(p.delta >= 0 && p.delta < 1e9)) {
        return OutOfRange("page_hinkley.delta", p.delta, "finite and >= 0");
      }
      if (!(p.threshold > 0 && p.threshold < 1e15)) {
        return OutOfRange("page_hinkley.threshold", p.threshold,
                          "finite and > 0");
      }
      if (!(p.alpha > 0 && p.alpha <= 1)) {
        return OutOfRange("page_hinkley.alpha", p.alpha, "in (0, 1]");
      }
      if (p.warning_threshold != 0 &&
          !(p.warning_threshold > 0 && p.warning_threshold < p.threshold)) {
        return OutOfRange("page_hinkley.warning_threshold", p.warning_threshold,
                          "0 (no warnings) or in (0, threshold)");
      }
      return absl::OkStatus();
    }
    case Method::kDdm: {
      const DdmOptions& d = o.ddm;
      if (d.warm_start < 1 || d.warm_start > 1000000000) {
        return OutOfRange("ddm.warm_start", static_cast<double>(d.warm_start),
                          "1 to 1000000000");
      }
      if (!(d.warning_level > 0 && d.warning_level < d.drift_level)) {
        return OutOfRange("ddm.warning_level", d.warning_level,
                          "> 0 and below drift_level");
      }
      if (!(d.drift_level < 1e6)) {
        return OutOfRange("ddm.drift_level", d.drift_level, "below 1e6");
      }
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError("drift: unknown method");
}

DriftDetector::DriftDetector(const DriftOptions& options)
    : method_(options.method), input_(options.input) {
  switch (method_) {
    case DriftOptions::Method::kNone:
      break;
    case DriftOptions::Method::kAdwin:
      adwin_.emplace(options.adwin_delta, options.adwin_clock);
      if (options.adwin_warning_delta > 0) {
        warning_adwin_.emplace(options.adwin_warning_delta,
                               options.adwin_clock);
      }
      break;
    case DriftOptions::Method::kPageHinkley:
      page_hinkley_.emplace(options.page_hinkley);
      break;
    case DriftOptions::Method::kDdm:
      ddm_.emplace(options.ddm);
      break;
  }
}

DriftSignal DriftDetector::Add(bool mistake, double loss, uint64_t position,
                               int64_t micros) {
  const double x =
      input_ == DriftOptions::Input::kLoss ? loss : (mistake ? 1.0 : 0.0);
  DriftSignal signal = DriftSignal::kStable;
  bool warned = false;  // ADWIN's warning window, also at a drift
  if (adwin_) {
    if (warning_adwin_) {
      const double before = warning_adwin_->mean();
      warned = Rose(warning_adwin_->Add(x), before, *warning_adwin_);
    }
    const double before = adwin_->mean();
    if (Rose(adwin_->Add(x), before, *adwin_)) {
      signal = DriftSignal::kDrift;
    } else if (warned) {
      signal = DriftSignal::kWarning;
    }
  } else if (page_hinkley_) {
    signal = page_hinkley_->Add(x);
  } else if (ddm_) {
    signal = ddm_->Add(mistake);
  }
  // A warning zone (DDM's, Page-Hinkley's) counts once, where it began.
  if ((signal == DriftSignal::kWarning || warned) &&
      signal_ != DriftSignal::kWarning) {
    ++warnings_;
    last_warning_at_ = position;
    last_warning_micros_ = micros;
  }
  if (signal == DriftSignal::kDrift) {
    ++drifts_;
    last_drift_at_ = position;
    last_drift_micros_ = micros;
  }
  signal_ = signal;
  return signal;
}

DriftStats DriftDetector::stats() const {
  DriftStats s;
  s.signal = signal_;
  s.warnings = warnings_;
  s.drifts = drifts_;
  s.last_warning_at = last_warning_at_;
  s.last_drift_at = last_drift_at_;
  s.last_warning_micros = last_warning_micros_;
  s.last_drift_micros = last_drift_micros_;
  if (adwin_) {
    s.estimate = adwin_->mean();
    s.width = adwin_->width();
  } else if (page_hinkley_) {
    s.estimate = page_hinkley_->mean();
    s.width = page_hinkley_->seen();
  } else if (ddm_) {
    s.estimate = ddm_->error_rate();
    s.width = ddm_->seen();
  }
  return s;
}

// [signal, warnings, drifts, last warning at, last drift at], then the
// detectors' states in the order they are declared, each after its length,
// then the times of the last warning and drift (a state exported before
// they were kept ends with the detectors').
std::vector<double> DriftDetector::Export() const {
  std::vector<double> out = {
      static_cast<double>(signal_), static_cast<double>(warnings_),
      static_cast<double>(drifts_), static_cast<double>(last_warning_at_),
      static_cast<double>(last_drift_at_)};
  const auto append = [&out](const std::vector<double>& part) {
    out.push_back(static_cast<double>(part.size()));
    out.insert(out.end(), part.begin(), part.end());
  };
  if (adwin_) append(adwin_->Export());
  if (warning_adwin_) append(warning_adwin_->Export());
  if (page_hinkley_) append(page_hinkley_->Export());
  if (ddm_) append(ddm_->Export());
  out.push_back(static_cast<double>(last_warning_micros_));
  out.push_back(static_cast<double>(last_drift_micros_));
  return out;
}

absl::Status DriftDetector::Import(absl::Span<const double> state) {
  const auto bad = [](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("the drift detector's state does not fit: ", why));
  };
  if (state.size() < 5) return bad("too short");
  if (!IsExportedCount(state[0], 2)) {
    return bad("its signal is not 0, 1 or 2");
  }
  for (size_t i = 1; i < 5; ++i) {
    if (!IsExportedCount(state[i])) return bad("its counts are not counts");
  }
  DriftDetector copy = *this;
  size_t at = 5;
  const auto next = [&](auto& part) -> absl::Status {
    if (at >= state.size() || !IsExportedCount(state[at]) ||
        state[at] > static_cast<double>(state.size() - at - 1)) {
      return bad("too short");
    }
    const size_t n = static_cast<size_t>(state[at]);
    absl::Status s = part.Import(state.subspan(at + 1, n));
    at += n + 1;
    return s;
  };
  absl::Status s;
  if (s.ok() && copy.adwin_) s = next(*copy.adwin_);
  if (s.ok() && copy.warning_adwin_) s = next(*copy.warning_adwin_);
  if (s.ok() && copy.page_hinkley_) s = next(*copy.page_hinkley_);
  if (s.ok() && copy.ddm_) s = next(*copy.ddm_);
  if (!s.ok()) return s;
  if (at + 2 == state.size()) {
    if (!IsExportedCount(state[at]) || !IsExportedCount(state[at + 1])) {
      return bad("its times are not microseconds since the Unix epoch");
    }
    copy.last_warning_micros_ = static_cast<int64_t>(state[at]);
    copy.last_drift_micros_ = static_cast<int64_t>(state[at + 1]);
  } else if (at != state.size()) {
    return bad("too long for its method");
  }
  copy.signal_ = static_cast<DriftSignal>(static_cast<int>(state[0]));
  copy.warnings_ = static_cast<uint64_t>(state[1]);
  copy.drifts_ = static_cast<uint64_t>(state[2]);
  copy.last_warning_at_ = static_cast<uint64_t>(state[3]);
  copy.last_drift_at_ = static_cast<uint64_t>(state[4]);
  *this = std::move(copy);
  return absl::OkStatus();
}

DriftSignal RecentState(const DriftStats& stats, uint64_t seen,
                        int64_t horizon) {
  const auto within = [&](uint64_t at) {
    return at > 0 && seen - at < static_cast<uint64_t>(horizon);
  };
  if (within(stats.last_drift_at) &&
      stats.last_drift_at >= stats.last_warning_at) {
    return DriftSignal::kDrift;
  }
  if (within(stats.last_warning_at)) return DriftSignal::kWarning;
  return DriftSignal::kStable;
}

int64_t DriftDetector::Bytes(const DriftOptions& options) {
  switch (options.method) {
    case DriftOptions::Method::kNone:
      return 0;
    case DriftOptions::Method::kAdwin:
      return static_cast<int64_t>(sizeof(DriftDetector)) +
             Adwin::Bytes(kCountedAdwinRows) *
                 (options.adwin_warning_delta > 0 ? 2 : 1);
    case DriftOptions::Method::kPageHinkley:
    case DriftOptions::Method::kDdm:
      break;
  }
  return static_cast<int64_t>(sizeof(DriftDetector));
}

}  // namespace halfspace
