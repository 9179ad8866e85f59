//! One backend per protocol, each turning wire frames into domain events and domain commands
//! into wire frames. The app only sees this trait.

pub mod acp;
pub mod claude;
pub mod gateway;
pub mod iii;
pub mod link;
pub mod process;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::core::msg::Command;
use crate::core::msg::Stamped;
use crate::core::state::ReplyCheck;

/// Capacity of the backend → UI channel: bounded so a flood cannot grow memory unchecked.
pub const EVENT_CHANNEL: usize = 4096;

pub trait Backend: Send + 'static {
    /// Short protocol name for the footer and the recording header.
    fn name(&self) -> &'static str;
    /// Name of the root node in the tree.
    fn root_name(&self) -> String;
    /// How hand-written replies are checked against this protocol's schema.
    fn reply_check(&self) -> ReplyCheck;
    /// Run the backend until `Command::Shutdown` (or the command channel closes) and the agent
    /// is gone. Every event is sent as a `Stamped`.
    fn start(
        self: Box<Self>,
        events: mpsc::Sender<Stamped>,
        commands: mpsc::UnboundedReceiver<Command>,
    ) -> JoinHandle<()>;
}
