"""What a quality dataset is: users, their sessions of turns, and questions about them.

Plain dataclasses, rebuilt the same way in every process from a path or a seed, so
replays running in parallel agree on every id without passing the data around.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

END = -1  # a question asked after the user's last session


@dataclass(frozen=True)
class Turn:
    key: str  # the dataset's id of the turn (LoCoMo's dia_id), also the ADK event id
    author: str
    text: str


@dataclass(frozen=True)
class Session:
    id: str
    at: datetime  # when the session starts; its turns follow a minute apart
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    evidence: tuple[str, ...]  # turn keys that must all be in the top 10
    # Mode -> index of the session before which it is asked (END: after the last one).
    ask: dict[str, int]
    category: str = ""
    # Synthetic ground truth: the answer is a pinned / high-importance fact; ``stale``
    # holds the keys of superseded values of the same fact (an old address).
    pinned: bool = False
    high: bool = False
    stale: tuple[str, ...] = ()


@dataclass(frozen=True)
class User:
    user_id: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]


@dataclass
class Dataset:
    name: str  # "locomo" or "synthetic"
    modes: tuple[str, ...]
    users: list[User] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was skipped and why

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for u in self.users for s in u.sessions)

    @property
    def questions(self) -> int:
        return sum(len(u.questions) for u in self.users)
