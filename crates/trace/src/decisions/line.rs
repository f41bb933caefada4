//! An entry as one JSON line (the decision log's file form).

use super::{Classed, Entry, Nudged, Sent};
use hybridland_policy::{OwnedInput, TimeNs};
use serde::{Deserialize, Serialize};

/// An entry's JSON line: exactly one of `now` with `in`, `sent`, `nudged`, `classed`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    now: Option<TimeNs>,
    #[serde(rename = "in", default, skip_serializing_if = "Option::is_none")]
    input: Option<OwnedInput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sent: Option<Sent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nudged: Option<Nudged>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    classed: Option<Classed>,
}

impl Serialize for Entry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut line = Line {
            now: None,
            input: None,
            sent: None,
            nudged: None,
            classed: None,
        };
        match self {
            Self::Input { now, input } => {
                line.now = Some(*now);
                line.input = Some(input.clone());
            }
            Self::Sent(x) => line.sent = Some(*x),
            Self::Nudged(x) => line.nudged = Some(*x),
            Self::Classed(x) => line.classed = Some(*x),
        }
        line.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let line = Line::deserialize(d)?;
        match line {
            Line {
                now: Some(now),
                input: Some(input),
                sent: None,
                nudged: None,
                classed: None,
            } => Ok(Self::Input { now, input }),
            Line {
                now: None,
                input: None,
                sent: Some(x),
                nudged: None,
                classed: None,
            } => Ok(Self::Sent(x)),
            Line {
                now: None,
                input: None,
                sent: None,
                nudged: Some(x),
                classed: None,
            } => Ok(Self::Nudged(x)),
            Line {
                now: None,
                input: None,
                sent: None,
                nudged: None,
                classed: Some(x),
            } => Ok(Self::Classed(x)),
            _ => Err(D::Error::custom(
                "an entry is `now` with `in`, or `sent`, or `nudged`, or `classed`, and nothing else",
            )),
        }
    }
}
