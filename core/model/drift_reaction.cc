#include "core/model/drift_reaction.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/monitors/exported_state.h"
#include "core/monitors/paired_mistakes.h"

namespace halfspace {

namespace {

// The version of Export's layout, its first number.
constexpr double kExportVersion = 1;

// The discordant examples at the first test.
constexpr uint64_t kFirstTest = 8;

// The counters Export writes after the version, in this order.
constexpr size_t kExportedCounters = 13;

}  // namespace

DriftReaction::DriftReaction(const ModelSpec& spec) : spec_(spec) {}

void DriftReaction::Start(uint64_t position, int64_t micros, bool armed) {
  challenger_ = MakeLearner(spec_);
  challenger_->set_undo_log(&undo_);
  stats_.challenging = true;
  stats_.started_at = position;
  stats_.started_micros = micros;
  stats_.armed_at = armed ? position : 0;
  stats_.examples = 0;
  stats_.only_model_wrong = 0;
  stats_.only_challenger_wrong = 0;
  stats_.tests = 0;
}

void DriftReaction::Learn(Features x, int y, double s, bool model_mistake) {
  test_due_ = false;
  if (challenger_ == nullptr) return;
  undo_.Clear();
  challenger_->Learn(x, y, s, scratch_);
  if (!std::isfinite(scratch_.update.score) ||
      !std::isfinite(scratch_.update.loss) || !undo_.Finite()) {
    undo_.Undo();
    return;
  }
  stats_.examples += 1;
  if (model_mistake == scratch_.mistake) return;
  (model_mistake ? stats_.only_model_wrong : stats_.only_challenger_wrong) += 1;
  test_due_ =
      ChallengeTestDue(stats_.only_model_wrong + stats_.only_challenger_wrong);
}

bool ChallengeTestDue(uint64_t discordant) {
  return discordant >= kFirstTest && (discordant & (discordant - 1)) == 0;
}

double ChallengeTestLevel(double alpha, uint64_t discordant) {
  double k = 1;
  for (uint64_t n = discordant; n > kFirstTest; n /= 2) k += 1;
  return alpha / (k * (k + 1));
}

bool DriftReaction::Won() {
  if (!test_due_) return false;
  stats_.tests += 1;
  if (stats_.only_model_wrong <= stats_.only_challenger_wrong) return false;
  // McNemar's test as CompareModels takes it, the challenger the self.
  PairedCounts counts;
  counts.examples = stats_.examples;
  counts.only_peer_wrong = stats_.only_model_wrong;
  counts.only_self_wrong = stats_.only_challenger_wrong;
  const PairedComparison comparison = Compare(
      counts,
      ChallengeTestLevel(spec_.drift.challenge_alpha,
                         counts.only_peer_wrong + counts.only_self_wrong));
  if (!comparison.significant) return false;
  stats_.last_switch_p_value = comparison.test.p_value;
  return true;
}

ReactionEvent DriftReaction::React(DriftSignal signal, bool event,
                                   uint64_t position, int64_t micros,
                                   std::unique_ptr<Learner>& learner) {
  const bool drift = signal == DriftSignal::kDrift;
  if (challenger_ == nullptr) {
    if (!drift && !(signal == DriftSignal::kWarning && event)) {
      return ReactionEvent::kNone;
    }
    Start(position, micros, drift);
    return ReactionEvent::kStarted;
  }
  if (drift && stats_.armed_at == 0) stats_.armed_at = position;
  if (stats_.armed_at != 0 && Won()) {
    // Each leaves the batch whole and without an undo log: the model sets
    // its own on the learner it now has.
    challenger_->EndBatch();
    challenger_->set_undo_log(UndoLog::Off());
    learner->EndBatch();
    learner->set_undo_log(UndoLog::Off());
    std::swap(learner, challenger_);
    previous_ = std::move(challenger_);
    stats_.challenging = false;
    stats_.switches += 1;
    stats_.last_switch_at = position;
    stats_.last_switch_micros = micros;
    stats_.can_roll_back = true;
    return ReactionEvent::kSwitched;
  }
  const uint64_t since =
      stats_.armed_at != 0 ? stats_.armed_at : stats_.started_at;
  if (position - since >= static_cast<uint64_t>(spec_.progress_window)) {
    stats_.dropped += 1;
    stats_.challenging = false;
    challenger_.reset();
    return ReactionEvent::kDropped;
  }
  return ReactionEvent::kNone;
}

absl::Status DriftReaction::RollBack(std::unique_ptr<Learner>& learner) {
  if (previous_ == nullptr) {
    return absl::FailedPreconditionError(
        "the model has no weights to roll back to: none were replaced by a "
        "challenger since it was created or last rolled back");
  }
  std::swap(learner, previous_);
  previous_.reset();
  challenger_.reset();
  stats_.challenging = false;
  stats_.can_roll_back = false;
  return absl::OkStatus();
}

void DriftReaction::EndBatch() {
  if (challenger_ != nullptr) challenger_->EndBatch();
}

ReactionStats DriftReaction::stats() const { return stats_; }

void ExportLearner(const Learner& learner, int64_t width,
                   std::vector<double>& out) {
  ModelSnapshot weights;
  learner.CopyWeights(weights, 0, width);
  out.push_back(static_cast<double>(width));
  out.insert(out.end(), weights.weights.w.begin(), weights.weights.w.end());
  out.push_back(weights.weights.b);
  const std::vector<double> state = learner.ExportState();
  out.push_back(static_cast<double>(state.size()));
  out.insert(out.end(), state.begin(), state.end());
}

absl::Status ImportLearner(absl::Span<const double>& in, int64_t width,
                           Learner& learner) {
  const auto bad = [] {
    return absl::InvalidArgumentError(
        "a drift reaction's learner does not fit the model");
  };
  if (in.empty() || in[0] != static_cast<double>(width) ||
      in.size() < static_cast<size_t>(width) + 3) {
    return bad();
  }
  LinearWeights weights(width);
  for (int64_t j = 0; j < width; ++j) weights.w[j] = in[1 + j];
  weights.b = in[1 + width];
  const double length = in[2 + width];
  in.remove_prefix(static_cast<size_t>(width) + 3);
  if (!IsExportedCount(length) || length > static_cast<double>(in.size())) {
    return bad();
  }
  for (double v : weights.w) {
    if (!std::isfinite(v)) return bad();
  }
  if (!std::isfinite(weights.b)) return bad();
  if (absl::Status s = learner.SetWeights("", std::move(weights)); !s.ok()) {
    return s;
  }
  const size_t n = static_cast<size_t>(length);
  absl::Status s = learner.ImportState(in.subspan(0, n));
  in.remove_prefix(n);
  return s;
}

std::vector<double> DriftReaction::Export() const {
  std::vector<double> out = {
      kExportVersion,
      stats_.challenging ? 1.0 : 0.0,
      static_cast<double>(stats_.started_at),
      static_cast<double>(stats_.started_micros),
      static_cast<double>(stats_.armed_at),
      static_cast<double>(stats_.examples),
      static_cast<double>(stats_.only_model_wrong),
      static_cast<double>(stats_.only_challenger_wrong),
      static_cast<double>(stats_.tests),
      static_cast<double>(stats_.switches),
      static_cast<double>(stats_.dropped),
      static_cast<double>(stats_.last_switch_at),
      static_cast<double>(stats_.last_switch_micros),
      stats_.last_switch_p_value,
  };
  static_assert(kExportedCounters == 13);
  out.push_back(stats_.can_roll_back ? 1.0 : 0.0);
  const int64_t width = FeatureWidth(spec_);
  if (challenger_ != nullptr) ExportLearner(*challenger_, width, out);
  if (previous_ != nullptr) ExportLearner(*previous_, width, out);
  return out;
}

absl::Status DriftReaction::Import(absl::Span<const double> state) {
  const auto bad = [](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("a drift reaction's state ", why));
  };
  if (state.size() < kExportedCounters + 2 || state[0] != kExportVersion) {
    return bad("has an unknown layout");
  }
  const auto flag = [](double v) { return v == 0.0 || v == 1.0; };
  if (!flag(state[1]) || !flag(state[14])) return bad("has a bad flag");
  for (size_t i : {2, 4, 5, 6, 7, 8, 9, 10, 11}) {
    if (!IsExportedCount(state[i])) return bad("has a bad count");
  }
  const auto micros = [](double v) {
    return std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15;
  };
  if (!micros(state[3]) || !micros(state[12])) return bad("has a bad time");
  if (!(state[13] >= 0.0 && state[13] <= 1.0)) return bad("has a bad p");
  if (state[6] + state[7] > state[5]) return bad("counts more than it saw");
  ReactionStats s;
  s.challenging = state[1] == 1.0;
  s.started_at = static_cast<uint64_t>(state[2]);
  s.started_micros = static_cast<int64_t>(state[3]);
  s.armed_at = static_cast<uint64_t>(state[4]);
  s.examples = static_cast<uint64_t>(state[5]);
  s.only_model_wrong = static_cast<uint64_t>(state[6]);
  s.only_challenger_wrong = static_cast<uint64_t>(state[7]);
  s.tests = static_cast<uint64_t>(state[8]);
  s.switches = static_cast<uint64_t>(state[9]);
  s.dropped = static_cast<uint64_t>(state[10]);
  s.last_switch_at = static_cast<uint64_t>(state[11]);
  s.last_switch_micros = static_cast<int64_t>(state[12]);
  s.last_switch_p_value = state[13];
  s.can_roll_back = state[14] == 1.0;
  absl::Span<const double> rest = state.subspan(kExportedCounters + 2);
  const int64_t width = FeatureWidth(spec_);
  std::unique_ptr<Learner> challenger;
  std::unique_ptr<Learner> previous;
  if (s.challenging) {
    challenger = MakeLearner(spec_);
    if (absl::Status e = ImportLearner(rest, width, *challenger); !e.ok()) {
      return e;
    }
  }
  if (s.can_roll_back) {
    previous = MakeLearner(spec_);
    if (absl::Status e = ImportLearner(rest, width, *previous); !e.ok()) {
      return e;
    }
  }
  if (!rest.empty()) return bad("has numbers past its end");
  if (challenger != nullptr) challenger->set_undo_log(&undo_);
  challenger_ = std::move(challenger);
  previous_ = std::move(previous);
  stats_ = s;
  return absl::OkStatus();
}

}  // namespace halfspace
