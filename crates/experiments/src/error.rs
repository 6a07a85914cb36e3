//! Error types of the experiments core.

/// Why an experiment definition was refused; `field` is the dotted path of the value
/// at fault (`experiment[2].schedule.daily_at`), so the operator knows what to fix.
/// Both variants are the caller's fault: the admin API answers 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    /// The text is not valid TOML/JSON or does not fit the schema (unknown key, wrong
    /// type); the message is the parser's, with its position.
    #[error("{0}")]
    Parse(String),
    /// A value parsed but cannot work.
    #[error("{field}: {reason}")]
    Invalid {
        /// Dotted path of the value.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl DefinitionError {
    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        DefinitionError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The same error with `prefix.` in front of its field path.
    pub(crate) fn within(self, prefix: &str) -> Self {
        match self {
            DefinitionError::Invalid { field, reason } => DefinitionError::Invalid {
                field: format!("{prefix}.{field}"),
                reason,
            },
            other => other,
        }
    }
}

/// Why an operator command on the running experiments was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// No definition has this id (404).
    #[error("no experiment {0:?}")]
    UnknownExperiment(String),
    /// No run with this id is in progress (404 / 409).
    #[error("no running experiment run {0:?}")]
    NotRunning(String),
    /// The experiment already has a run in progress (409).
    #[error("experiment {0:?} is already running")]
    AlreadyRunning(String),
    /// The experiment is disabled (409).
    #[error("experiment {0:?} is disabled")]
    Disabled(String),
}
