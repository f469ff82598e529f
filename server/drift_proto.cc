#include "server/drift_proto.h"

#include <algorithm>

namespace halfspace {

absl::StatusOr<DriftOptions> FromProto(const v1::DriftDetection& drift) {
  DriftOptions o;
  switch (drift.input()) {
    case v1::DriftDetection::INPUT_UNSPECIFIED:
    case v1::DriftDetection::INPUT_MISTAKES:
      o.input = DriftOptions::Input::kMistakes;
      break;
    case v1::DriftDetection::INPUT_LOSS:
      o.input = DriftOptions::Input::kLoss;
      break;
    default:
      return absl::InvalidArgumentError(
          "drift.input is not one this server knows: use INPUT_MISTAKES or "
          "INPUT_LOSS");
  }
  switch (drift.method_case()) {
    case v1::DriftDetection::kAdwin: {
      const v1::DriftDetection::Adwin& a = drift.adwin();
      o.method = DriftOptions::Method::kAdwin;
      if (a.has_delta()) o.adwin_delta = a.delta();
      o.adwin_warning_delta =
          a.has_warning_delta()
              ? a.warning_delta()
              : std::min(10 * o.adwin_delta, (1 + o.adwin_delta) / 2);
      if (a.has_clock()) o.adwin_clock = a.clock();
      break;
    }
    case v1::DriftDetection::kPageHinkley: {
      const v1::DriftDetection::PageHinkley& p = drift.page_hinkley();
      o.method = DriftOptions::Method::kPageHinkley;
      PageHinkleyOptions& ph = o.page_hinkley;
      if (p.has_min_instances()) ph.min_instances = p.min_instances();
      if (p.has_delta()) ph.delta = p.delta();
      if (p.has_threshold()) ph.threshold = p.threshold();
      if (p.has_alpha()) ph.alpha = p.alpha();
      if (p.has_warning_threshold()) {
        ph.warning_threshold = p.warning_threshold();
      }
      break;
    }
    case v1::DriftDetection::kDdm: {
      const v1::DriftDetection::Ddm& d = drift.ddm();
      o.method = DriftOptions::Method::kDdm;
      if (d.has_warm_start()) o.ddm.warm_start = d.warm_start();
      if (d.has_warning_level()) o.ddm.warning_level = d.warning_level();
      if (d.has_drift_level()) o.ddm.drift_level = d.drift_level();
      break;
    }
    case v1::DriftDetection::METHOD_NOT_SET:
      return absl::InvalidArgumentError(
          "drift sets no method: set one of adwin, page_hinkley or ddm");
  }
  if (drift.has_challenge()) {
    o.challenge = true;
    if (drift.challenge().has_alpha()) {
      o.challenge_alpha = drift.challenge().alpha();
    }
  }
  return o;
}

void ToProto(const DriftOptions& o, v1::DriftDetection* out) {
  out->set_input(o.input == DriftOptions::Input::kLoss
                     ? v1::DriftDetection::INPUT_LOSS
                     : v1::DriftDetection::INPUT_MISTAKES);
  switch (o.method) {
    case DriftOptions::Method::kNone:
      break;
    case DriftOptions::Method::kAdwin: {
      v1::DriftDetection::Adwin* a = out->mutable_adwin();
      a->set_delta(o.adwin_delta);
      a->set_warning_delta(o.adwin_warning_delta);
      a->set_clock(static_cast<uint32_t>(o.adwin_clock));
      break;
    }
    case DriftOptions::Method::kPageHinkley: {
      v1::DriftDetection::PageHinkley* p = out->mutable_page_hinkley();
      p->set_min_instances(static_cast<uint32_t>(o.page_hinkley.min_instances));
      p->set_delta(o.page_hinkley.delta);
      p->set_threshold(o.page_hinkley.threshold);
      p->set_alpha(o.page_hinkley.alpha);
      p->set_warning_threshold(o.page_hinkley.warning_threshold);
      break;
    }
    case DriftOptions::Method::kDdm: {
      v1::DriftDetection::Ddm* d = out->mutable_ddm();
      d->set_warm_start(static_cast<uint32_t>(o.ddm.warm_start));
      d->set_warning_level(o.ddm.warning_level);
      d->set_drift_level(o.ddm.drift_level);
      break;
    }
  }
  if (o.challenge) out->mutable_challenge()->set_alpha(o.challenge_alpha);
}

v1::DriftState::Reaction::Event ToProto(ReactionEvent event) {
  switch (event) {
    case ReactionEvent::kNone:
      break;
    case ReactionEvent::kStarted:
      return v1::DriftState::Reaction::EVENT_STARTED;
    case ReactionEvent::kSwitched:
      return v1::DriftState::Reaction::EVENT_SWITCHED;
    case ReactionEvent::kDropped:
      return v1::DriftState::Reaction::EVENT_DROPPED;
  }
  return v1::DriftState::Reaction::EVENT_UNSPECIFIED;
}

void ToProto(const ReactionStats& r, v1::DriftState::Reaction* out) {
  out->set_challenging(r.challenging);
  out->set_started_at(r.started_at);
  if (r.started_micros > 0) {
    ToTimestamp(r.started_micros, out->mutable_started_time());
  }
  out->set_armed_at(r.armed_at);
  out->set_examples(r.examples);
  out->set_only_model_wrong(r.only_model_wrong);
  out->set_only_challenger_wrong(r.only_challenger_wrong);
  out->set_tests(r.tests);
  out->set_switches(r.switches);
  out->set_dropped(r.dropped);
  out->set_last_switch_at(r.last_switch_at);
  if (r.last_switch_micros > 0) {
    ToTimestamp(r.last_switch_micros, out->mutable_last_switch_time());
  }
  out->set_last_switch_p_value(r.last_switch_p_value);
  out->set_can_roll_back(r.can_roll_back);
}

void ToTimestamp(int64_t micros, google::protobuf::Timestamp* out) {
  out->set_seconds(micros / 1000000);
  out->set_nanos(static_cast<int32_t>(micros % 1000000) * 1000);
}

v1::DriftState::Signal ToProto(DriftSignal signal) {
  switch (signal) {
    case DriftSignal::kStable:
      break;
    case DriftSignal::kWarning:
      return v1::DriftState::SIGNAL_WARNING;
    case DriftSignal::kDrift:
      return v1::DriftState::SIGNAL_DRIFT;
  }
  return v1::DriftState::SIGNAL_STABLE;
}

void ToProto(const ModelDrift& drift, v1::DriftState* out) {
  const DriftStats& d = drift.stats;
  out->set_state(ToProto(drift.state));
  out->set_signal(ToProto(d.signal));
  out->set_warnings(d.warnings);
  out->set_drifts(d.drifts);
  out->set_last_warning_at(d.last_warning_at);
  out->set_last_drift_at(d.last_drift_at);
  out->set_estimate(d.estimate);
  out->set_width(d.width);
  if (d.last_warning_micros > 0) {
    ToTimestamp(d.last_warning_micros, out->mutable_last_warning_time());
  }
  if (d.last_drift_micros > 0) {
    ToTimestamp(d.last_drift_micros, out->mutable_last_drift_time());
  }
  if (drift.reaction.has_value()) {
    ToProto(*drift.reaction, out->mutable_reaction());
  }
}

void ToProto(const ModelEvent& event, v1::ModelEvent* out) {
  switch (event.kind) {
    case ModelEventKind::kWarning:
      out->set_kind(v1::ModelEvent::KIND_WARNING);
      break;
    case ModelEventKind::kDrift:
      out->set_kind(v1::ModelEvent::KIND_DRIFT);
      break;
    case ModelEventKind::kChallengerStarted:
      out->set_kind(v1::ModelEvent::KIND_CHALLENGER_STARTED);
      break;
    case ModelEventKind::kSwitched:
      out->set_kind(v1::ModelEvent::KIND_SWITCHED);
      out->set_p_value(event.p_value);
      break;
    case ModelEventKind::kChallengerDropped:
      out->set_kind(v1::ModelEvent::KIND_CHALLENGER_DROPPED);
      break;
    case ModelEventKind::kRolledBack:
      out->set_kind(v1::ModelEvent::KIND_ROLLED_BACK);
      break;
  }
  out->set_position(event.position);
  if (event.micros > 0) ToTimestamp(event.micros, out->mutable_time());
}

}  // namespace halfspace
