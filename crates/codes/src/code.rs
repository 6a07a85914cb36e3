//! [`Code`]: one condition of any family, and the way to its row.

use crate::families::{
    AccessRefusal, CaptionError, ExperimentsError, FaultRuleError, Health, InputFault, LadderFault,
    McAnswerFault, OttRefusal, RequestError, Shed,
};
use crate::meeting::ErrorCode;
use crate::row::CodeInfo;

/// One condition a client can be answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// A meeting code (seed 000).
    Meeting(ErrorCode),
    /// An OTT refusal.
    Ott(OttRefusal),
    /// An experiments API refusal.
    Experiments(ExperimentsError),
    /// A fault-rule API refusal.
    FaultRule(FaultRuleError),
    /// A request error.
    Request(RequestError),
    /// The back-pressure answer.
    Shed(Shed),
    /// A fault of a stream's ladder (logs and status).
    Ladder(LadderFault),
    /// A fault of a stream's input (logs and status; 111010 answers viewers).
    Input(InputFault),
    /// A caption API refusal.
    Caption(CaptionError),
    /// A private meeting's refusal.
    Access(AccessRefusal),
    /// An entry of an MC's answer a node refused (logs).
    McAnswer(McAnswerFault),
    /// A process's health or readiness.
    Health(Health),
}

impl Code {
    /// This code's row.
    pub fn info(self) -> &'static CodeInfo {
        match self {
            Code::Meeting(c) => c.info(),
            Code::Ott(c) => c.info(),
            Code::Experiments(c) => c.info(),
            Code::FaultRule(c) => c.info(),
            Code::Request(c) => c.info(),
            Code::Shed(c) => c.info(),
            Code::Ladder(c) => c.info(),
            Code::Input(c) => c.info(),
            Code::Caption(c) => c.info(),
            Code::Access(c) => c.info(),
            Code::McAnswer(c) => c.info(),
            Code::Health(c) => c.info(),
        }
    }

    crate::row::row_accessors!();

    /// The error body: `{"code":N,"message":"…"}`, with `field` when given (see
    /// [`crate::body::json`]).
    pub fn json(self, field: Option<&str>) -> String {
        crate::body::json(self.info(), field)
    }

    /// Whether the client should retry after a while.
    pub fn retryable(self) -> bool {
        self.info().retryable
    }

    /// Every code, family by family, in table order.
    pub fn all() -> impl Iterator<Item = Code> {
        ErrorCode::ALL
            .into_iter()
            .map(Code::Meeting)
            .chain(OttRefusal::ALL.iter().copied().map(Code::Ott))
            .chain(ExperimentsError::ALL.iter().copied().map(Code::Experiments))
            .chain(FaultRuleError::ALL.iter().copied().map(Code::FaultRule))
            .chain(RequestError::ALL.iter().copied().map(Code::Request))
            .chain(Shed::ALL.iter().copied().map(Code::Shed))
            .chain(LadderFault::ALL.iter().copied().map(Code::Ladder))
            .chain(InputFault::ALL.iter().copied().map(Code::Input))
            .chain(CaptionError::ALL.iter().copied().map(Code::Caption))
            .chain(AccessRefusal::ALL.iter().copied().map(Code::Access))
            .chain(McAnswerFault::ALL.iter().copied().map(Code::McAnswer))
            .chain(Health::ALL.iter().copied().map(Code::Health))
    }

    /// The code with this number, if it is in the table.
    pub fn from_number(code: u32) -> Option<Code> {
        Code::all().find(|c| c.code() == code)
    }
}

impl From<ErrorCode> for Code {
    fn from(code: ErrorCode) -> Self {
        Code::Meeting(code)
    }
}

impl From<OttRefusal> for Code {
    fn from(code: OttRefusal) -> Self {
        Code::Ott(code)
    }
}

impl From<LadderFault> for Code {
    fn from(code: LadderFault) -> Self {
        Code::Ladder(code)
    }
}

impl From<InputFault> for Code {
    fn from(code: InputFault) -> Self {
        Code::Input(code)
    }
}

impl From<CaptionError> for Code {
    fn from(code: CaptionError) -> Self {
        Code::Caption(code)
    }
}

impl From<AccessRefusal> for Code {
    fn from(code: AccessRefusal) -> Self {
        Code::Access(code)
    }
}

impl From<RequestError> for Code {
    fn from(code: RequestError) -> Self {
        Code::Request(code)
    }
}

impl From<McAnswerFault> for Code {
    fn from(code: McAnswerFault) -> Self {
        Code::McAnswer(code)
    }
}

impl From<Health> for Code {
    fn from(code: Health) -> Self {
        Code::Health(code)
    }
}
