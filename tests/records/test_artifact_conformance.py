"""One behavioural suite, run against ADK's InMemoryArtifactService and ours.

Every test taking ``service`` runs twice and must pass identically on both.
"""

import pytest
from google.adk.artifacts import artifact_util
from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
from google.adk.errors.input_validation_error import InputValidationError
from google.genai import types

from records.artifact_service import DjangoArtifactService

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

APP, ALICE, BOB = "pharmacy", "alice", "bob"


@pytest.fixture(params=["adk_in_memory", "django"])
def service(request):
    if request.param == "adk_in_memory":
        return InMemoryArtifactService()
    request.getfixturevalue("close_executor_connections")
    return DjangoArtifactService()


def text(value: str) -> types.Part:
    return types.Part(text=value)


def blob(data: bytes, mime_type="application/pdf", **kw) -> types.Part:
    return types.Part(inline_data=types.Blob(mime_type=mime_type, data=data, **kw))


async def save(service, filename, part, session_id="s1", user_id=ALICE, **kw):
    return await service.save_artifact(
        app_name=APP, user_id=user_id, session_id=session_id, filename=filename, artifact=part, **kw
    )


async def load(service, filename, session_id="s1", user_id=ALICE, version=None):
    return await service.load_artifact(
        app_name=APP, user_id=user_id, session_id=session_id, filename=filename, version=version
    )


# --- versions ---------------------------------------------------------------------------


async def test_versions_count_from_zero_and_load_picks_latest_or_asked(service):
    assert await save(service, "receipt.txt", text("v0")) == 0
    assert await save(service, "receipt.txt", text("v1")) == 1
    assert await save(service, "receipt.txt", text("v2")) == 2
    assert await save(service, "other.txt", text("o")) == 0  # versions are per file

    assert (await load(service, "receipt.txt")).text == "v2"
    assert (await load(service, "receipt.txt", version=0)).text == "v0"
    assert (await load(service, "receipt.txt", version=1)).text == "v1"


async def test_loading_what_does_not_exist_returns_none(service):
    await save(service, "receipt.txt", text("v0"))
    assert await load(service, "receipt.txt", version=1) is None
    assert await load(service, "receipt.txt", version=-1) is None
    assert await load(service, "missing.txt") is None
    assert await load(service, "receipt.txt", session_id="s2") is None
    assert await load(service, "receipt.txt", user_id=BOB) is None


async def test_inline_bytes_and_text_round_trip(service):
    payload = bytes(range(256)) * 4
    await save(service, "scan.pdf", blob(payload, display_name="Scan of receipt"))
    await save(service, "note.md", text("# héllo\n"))

    loaded = await load(service, "scan.pdf")
    assert loaded == blob(payload, display_name="Scan of receipt")
    assert loaded.inline_data.data == payload
    assert await load(service, "note.md") == text("# héllo\n")


async def test_an_artifact_can_be_given_as_a_camel_case_dict(service):
    await save(service, "a.bin", {"inlineData": {"mimeType": "image/png", "data": b"\x89PNG"}})
    assert await load(service, "a.bin") == blob(b"\x89PNG", mime_type="image/png")


async def test_a_part_with_nothing_to_store_is_refused(service):
    with pytest.raises(InputValidationError):
        await save(service, "empty", types.Part())
    assert (
        await service.list_versions(app_name=APP, user_id=ALICE, session_id="s1", filename="empty")
        == []
    )


async def test_a_saved_part_is_a_copy(service):
    part = text("original")
    await save(service, "n.txt", part)
    part.text = "changed after saving"
    loaded = await load(service, "n.txt")
    assert loaded.text == "original"
    loaded.text = "changed after loading"
    assert (await load(service, "n.txt")).text == "original"


# --- scopes ---------------------------------------------------------------------------------


async def test_session_scoped_artifacts_stay_in_their_session(service):
    await save(service, "draft.txt", text("in s1"), session_id="s1")
    await save(service, "draft.txt", text("in s2"), session_id="s2")

    assert (await load(service, "draft.txt", session_id="s1")).text == "in s1"
    assert (await load(service, "draft.txt", session_id="s2")).text == "in s2"
    assert await load(service, "draft.txt", session_id="s3") is None
    assert await load(service, "draft.txt", session_id="s1", user_id=BOB) is None


async def test_user_scoped_artifacts_are_shared_by_the_users_sessions(service):
    assert await save(service, "user:profile.png", blob(b"v0", "image/png"), session_id="s1") == 0
    assert await save(service, "user:profile.png", blob(b"v1", "image/png"), session_id="s2") == 1

    for session_id in ("s1", "s2", "s9", None):
        loaded = await load(service, "user:profile.png", session_id=session_id)
        assert loaded.inline_data.data == b"v1"
    assert await load(service, "user:profile.png", user_id=BOB) is None


async def test_a_session_scoped_artifact_without_a_session_is_refused(service):
    with pytest.raises(InputValidationError, match="[Ss]ession"):
        await save(service, "draft.txt", text("x"), session_id=None)
    with pytest.raises(InputValidationError, match="[Ss]ession"):
        await load(service, "draft.txt", session_id=None)


async def test_list_artifact_keys_gives_the_sessions_and_the_users_sorted(service):
    await save(service, "b.txt", text("x"), session_id="s1")
    await save(service, "a.txt", text("x"), session_id="s1")
    await save(service, "a.txt", text("x2"), session_id="s1")
    await save(service, "c.txt", text("x"), session_id="s2")
    await save(service, "user:z.png", blob(b"z", "image/png"), session_id="s2")
    await save(service, "user:bobs.txt", text("x"), session_id="s1", user_id=BOB)

    async def keys(session_id, user_id=ALICE):
        return await service.list_artifact_keys(
            app_name=APP, user_id=user_id, session_id=session_id
        )

    assert await keys("s1") == ["a.txt", "b.txt", "user:z.png"]
    assert await keys("s2") == ["c.txt", "user:z.png"]
    assert await keys("s3") == ["user:z.png"]
    assert await keys(None) == ["user:z.png"]
    assert await keys("s1", user_id=BOB) == ["user:bobs.txt"]
    assert await keys("s1", user_id="nobody") == []


# --- deletion -------------------------------------------------------------------------------


async def test_delete_removes_every_version_and_numbering_restarts(service):
    await save(service, "r.txt", text("v0"))
    await save(service, "r.txt", text("v1"))
    await save(service, "keep.txt", text("k"))
    await save(service, "r.txt", text("other session"), session_id="s2")

    await service.delete_artifact(app_name=APP, user_id=ALICE, session_id="s1", filename="r.txt")

    assert await load(service, "r.txt") is None
    assert await load(service, "r.txt", version=0) is None
    assert (
        await service.list_versions(app_name=APP, user_id=ALICE, session_id="s1", filename="r.txt")
        == []
    )
    assert await service.list_artifact_keys(app_name=APP, user_id=ALICE, session_id="s1") == [
        "keep.txt"
    ]
    assert (await load(service, "r.txt", session_id="s2")).text == "other session"
    assert await save(service, "r.txt", text("fresh")) == 0
    # deleting what is not there is not an error
    await service.delete_artifact(app_name=APP, user_id=ALICE, session_id="s1", filename="nope")


async def test_deleting_a_user_scoped_artifact_from_any_session_deletes_it(service):
    await save(service, "user:card.txt", text("x"), session_id="s1")
    await service.delete_artifact(
        app_name=APP, user_id=ALICE, session_id="s2", filename="user:card.txt"
    )
    assert await load(service, "user:card.txt", session_id=None) is None


# --- filenames ------------------------------------------------------------------------------

# Filenames a URL path would normalise into another ("a//b" into "a/b", "./a.txt" and
# "../a.txt" into "a.txt", "dir/" into "dir"), beside the names they would become.
PATH_LIKE = ["a//b", "./a.txt", "../a.txt", "a/./b", "a/../b", "dir/", ".", "..", "/abs", "a/b/.."]
THEIR_NEIGHBOURS = ["a/b", "a.txt", "b", "dir", "abs", "a"]


async def test_any_filename_round_trips_as_itself(service):
    for name in THEIR_NEIGHBOURS:
        await save(service, name, text(f"neighbour {name}"))
    for name in PATH_LIKE + ["user:../x", "user:a//b/", "a?b#c&d=%2e%2E", " padded "]:
        assert await save(service, name, text(f"{name} v0")) == 0
        assert await save(service, name, text(f"{name} v1"), custom_metadata={"n": name}) == 1
    keys = sorted(THEIR_NEIGHBOURS + PATH_LIKE + ["user:../x", "user:a//b/"])
    keys += ["a?b#c&d=%2e%2E", " padded "]
    assert await service.list_artifact_keys(app_name=APP, user_id=ALICE, session_id="s1") == (
        sorted(keys)
    )

    for name in PATH_LIKE + ["user:../x", "user:a//b/", "a?b#c&d=%2e%2E", " padded "]:
        scope = {"app_name": APP, "user_id": ALICE, "session_id": "s1", "filename": name}
        assert (await load(service, name)).text == f"{name} v1"
        assert (await load(service, name, version=0)).text == f"{name} v0"
        assert await service.list_versions(**scope) == [0, 1]
        versions = await service.list_artifact_versions(**scope)
        assert [v.custom_metadata for v in versions] == [{}, {"n": name}]
        assert (await service.get_artifact_version(**scope)).version == 1
        assert (await service.get_artifact_version(**scope, version=0)).version == 0
        await service.delete_artifact(**scope)
        assert await load(service, name) is None
        assert await service.list_versions(**scope) == []
    for name in THEIR_NEIGHBOURS:
        assert (await load(service, name)).text == f"neighbour {name}"
    assert await service.list_artifact_keys(app_name=APP, user_id=ALICE, session_id="s1") == (
        sorted(THEIR_NEIGHBOURS)
    )


# --- metadata ---------------------------------------------------------------------------------


async def test_artifact_versions_carry_their_metadata(service):
    await save(service, "scan.pdf", blob(b"%PDF"), custom_metadata={"source": "upload", "n": [1]})
    await save(service, "scan.pdf", text("ocr text"))
    await save(
        service,
        "scan.pdf",
        types.Part(
            file_data=types.FileData(file_uri="gs://bucket/scan.tiff", mime_type="image/tiff")
        ),
    )

    versions = await service.list_artifact_versions(
        app_name=APP, user_id=ALICE, session_id="s1", filename="scan.pdf"
    )
    assert [v.version for v in versions] == [0, 1, 2]
    assert [v.mime_type for v in versions] == ["application/pdf", "text/plain", "image/tiff"]
    assert [v.custom_metadata for v in versions] == [{"source": "upload", "n": [1]}, {}, {}]
    assert all(v.create_time > 0 for v in versions)
    assert await service.list_versions(
        app_name=APP, user_id=ALICE, session_id="s1", filename="scan.pdf"
    ) == [0, 1, 2]

    async def version(v):
        return await service.get_artifact_version(
            app_name=APP, user_id=ALICE, session_id="s1", filename="scan.pdf", version=v
        )

    assert (await version(None)).version == 2
    assert (await version(0)).custom_metadata == {"source": "upload", "n": [1]}
    assert (await version(0)).canonical_uri == versions[0].canonical_uri
    assert await version(3) is None
    assert await version(-1) is None
    assert (
        await service.get_artifact_version(
            app_name=APP, user_id=ALICE, session_id="s1", filename="missing"
        )
        is None
    )
    assert (
        await service.list_artifact_versions(
            app_name=APP, user_id=ALICE, session_id="s1", filename="missing"
        )
        == []
    )


async def test_custom_metadata_is_copied_on_save(service):
    metadata = {"tags": ["a"]}
    await save(service, "n.txt", text("x"), custom_metadata=metadata)
    metadata["tags"].append("changed")
    got = await service.get_artifact_version(
        app_name=APP, user_id=ALICE, session_id="s1", filename="n.txt"
    )
    assert got.custom_metadata == {"tags": ["a"]}


async def test_canonical_uris_name_the_scope_file_and_version(service):
    await save(service, "n.txt", text("x"))
    await save(service, "n.txt", text("y"))
    await save(service, "user:p.txt", text("z"))
    session_versions = await service.list_artifact_versions(
        app_name=APP, user_id=ALICE, session_id="s1", filename="n.txt"
    )
    user_version = await service.get_artifact_version(
        app_name=APP, user_id=ALICE, session_id="s1", filename="user:p.txt"
    )
    uris = [v.canonical_uri for v in session_versions]
    assert uris[0].endswith(f"/apps/{APP}/users/{ALICE}/sessions/s1/artifacts/n.txt/versions/0")
    assert uris[1].endswith("/sessions/s1/artifacts/n.txt/versions/1")
    assert user_version.canonical_uri.endswith(
        f"/apps/{APP}/users/{ALICE}/artifacts/user:p.txt/versions/0"
    )


# --- references and rewinds ----------------------------------------------------------------


async def test_an_artifact_reference_loads_its_target(service):
    await save(service, "user:original.pdf", blob(b"%PDF-1"))
    await save(service, "user:original.pdf", blob(b"%PDF-2"))
    uri = artifact_util.get_artifact_uri(
        app_name=APP, user_id=ALICE, filename="user:original.pdf", version=0
    )
    assert await save(service, "link.pdf", types.Part(file_data=types.FileData(file_uri=uri))) == 0

    assert await load(service, "link.pdf") == blob(b"%PDF-1")
    ref_version = await service.get_artifact_version(
        app_name=APP, user_id=ALICE, session_id="s1", filename="link.pdf"
    )
    assert ref_version.mime_type is None  # known only once followed


async def test_a_reference_outside_the_users_scope_is_refused(service):
    uri = artifact_util.get_artifact_uri(
        app_name=APP, user_id=BOB, filename="user:secret.txt", version=0
    )
    with pytest.raises(InputValidationError, match="scope"):
        await save(service, "link.txt", types.Part(file_data=types.FileData(file_uri=uri)))
    other_session = artifact_util.get_artifact_uri(
        app_name=APP, user_id=ALICE, filename="x.txt", version=0, session_id="s2"
    )
    with pytest.raises(InputValidationError, match="scope"):
        await save(
            service, "link.txt", types.Part(file_data=types.FileData(file_uri=other_session))
        )


async def test_a_rewind_tombstone_loads_as_absent(service):
    await save(service, "r.txt", text("before"))
    await save(service, "r.txt", artifact_util._new_rewind_tombstone())
    assert await load(service, "r.txt") is None
    assert (await load(service, "r.txt", version=0)).text == "before"
    assert await service.list_versions(
        app_name=APP, user_id=ALICE, session_id="s1", filename="r.txt"
    ) == [0, 1]


async def test_ids_that_would_bend_a_path_are_refused(service):
    for kwargs in (
        {"user_id": "../bob"},
        {"user_id": ""},
        {"session_id": "/abs"},
        {"session_id": "a/users/b"},
    ):
        with pytest.raises(InputValidationError):
            await save(service, "x.txt", text("x"), **kwargs)
