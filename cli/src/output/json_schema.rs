//! The layouts of the JSON documents `zklock list --json` and `zklock deadlocks --json` print:
//! each names itself in its `schema` field (`zklock.list/1`), whose number is raised when a
//! field changes meaning or goes (a new field does not raise it). The manual page lists these
//! fields; docs/cli.md writes them out, and the command's tests check both outputs against it.

/// One field of a document: its path (`queues[].nodes[].pid`: in each element of the arrays
/// named), its JSON type, and when it appears or what it holds.
pub struct Field {
    pub path: &'static str,
    pub kind: &'static str,
    pub when: &'static str,
}

/// A document's layout: its `schema` name and its fields.
pub struct Schema {
    pub name: &'static str,
    pub fields: &'static [Field],
}

const fn field(path: &'static str, kind: &'static str, when: &'static str) -> Field {
    Field { path, kind, when }
}

/// `zklock list --json`.
pub const LIST: Schema = Schema {
    name: "zklock.list/1",
    fields: &[
        field("schema", "string", "always: \"zklock.list/1\""),
        field("path", "string", "always: the lock path"),
        field("held", "boolean", "always: someone holds (exit 0)"),
        field(
            "queues",
            "array",
            "always: one object per kind of lock on the path (on a path with none: on each lock under it), empty if none",
        ),
        field("queues[].path", "string", "always: the lock path of the queue (the path, or a lock under it)"),
        field(
            "queues[].kind",
            "string",
            "mutex, read-write, kazoo, kazoo-read-write, semaphore, kazoo-semaphore or leader-latch",
        ),
        field(
            "queues[].leases",
            "integer or null",
            "semaphore queues only: N, as zklock's lease nodes record it (kazoo-semaphore: as the path stores it)",
        ),
        field("queues[].nodes", "array", "always: the participants in queue order, holders first"),
        field("queues[].nodes[].node", "string", "always: the node's path"),
        field("queues[].nodes[].role", "string", "always: holder or waiter"),
        field("queues[].nodes[].side", "string", "read-write queues only: read or write"),
        field("queues[].nodes[].data", "string", "always: the node's data (an election's id)"),
        field("queues[].nodes[].token", "integer", "the fencing token (czxid)"),
        field("queues[].nodes[].session", "string", "the owner session (0x...)"),
        field("queues[].nodes[].created_ms", "integer", "the node's ctime, ms since the epoch"),
        field("queues[].nodes[].for_ms", "integer", "how long the node has stood, ms"),
        field("queues[].nodes[].pid", "integer or null", "a zklock participant's pid, else null"),
        field("queues[].nodes[].host", "string or null", "a zklock participant's host, else null"),
        field("queues[].nodes[].max_hold_ms", "integer or null", "a zklock holder's --max-hold bound, ms, else null"),
    ],
};

/// `zklock deadlocks --json`.
pub const DEADLOCKS: Schema = Schema {
    name: "zklock.deadlocks/2",
    fields: &[
        field("schema", "string", "always: \"zklock.deadlocks/2\""),
        field("version", "integer", "always: 2, the schema's number (kept for scripts that read it)"),
        field("root", "string", "always: the root searched"),
        field("root_exists", "boolean", "always"),
        field("locks", "integer", "always: how many locks were read"),
        field("found", "string", "always: none, certain, possible or no locks (exit 0, 1, 2, 3)"),
        field("deadlocked", "boolean", "always: a certain ring was found"),
        field("deadlocks", "array", "always: one object per ring"),
        field("deadlocks[].certain", "boolean", "always: every member a task or chain told by its tag"),
        field("deadlocks[].sessions", "array", "always: the ring's members, in ring order"),
        field("deadlocks[].sessions[].session", "string", "always: the member's (first) session"),
        field("deadlocks[].sessions[].task", "string or null", "the task's tag (12 hex digits), else null"),
        field("deadlocks[].sessions[].chain", "string or null", "the chain's id (12 hex digits), else null"),
        field("deadlocks[].sessions[].data", "string or null", "who the session is (a zklock's pid and host)"),
        field("deadlocks[].waits", "array", "always: each wait of the ring"),
        field("deadlocks[].waits[].waiter", "string", "always: the waiting session"),
        field("deadlocks[].waits[].waiter_task", "string or null", "the waiter's task tag, else null"),
        field("deadlocks[].waits[].waiter_chain", "string or null", "the waiter's chain id, else null"),
        field("deadlocks[].waits[].holder", "string", "always: the holding session"),
        field("deadlocks[].waits[].holder_task", "string or null", "the holder's task tag, else null"),
        field("deadlocks[].waits[].holder_chain", "string or null", "the holder's chain id, else null"),
        field("deadlocks[].waits[].lock", "string", "always: the lock path waited on"),
        field("deadlocks[].waits[].waiter_node", "string", "always: the waiting node"),
        field("deadlocks[].waits[].holder_node", "string", "always: the node ahead of it"),
        field("deadlocks[].waits[].holder_waiting", "boolean", "always: that node waits too, rather than holds"),
    ],
};

/// Both documents, as the manual lists them.
pub const ALL: [(&str, &Schema); 2] = [("zklock list --json", &LIST), ("zklock deadlocks --json", &DEADLOCKS)];
