"""Our artifact storage beyond ADK's contract: the rows, the sync API, validation, races."""

import pytest
from google.adk.artifacts import artifact_util
from google.adk.errors.input_validation_error import InputValidationError
from google.genai import types

from records import artifacts
from records.artifact_service import DjangoArtifactService
from records.models import Artifact

APP, ALICE = "pharmacy", "alice"


def save(filename, part, session_id="s1", **kw):
    return artifacts.save_artifact(
        app_name=APP, user_id=ALICE, session_id=session_id, filename=filename, artifact=part, **kw
    )


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_new_service_instance_sees_the_same_artifacts(close_executor_connections):
    writer = DjangoArtifactService()
    part = types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG"))
    await writer.save_artifact(
        app_name=APP, user_id=ALICE, session_id="s1", filename="p.png", artifact=part
    )
    del writer

    reader = DjangoArtifactService()
    assert (
        await reader.load_artifact(app_name=APP, user_id=ALICE, session_id="s1", filename="p.png")
        == part
    )
    assert await reader.list_artifact_keys(app_name=APP, user_id=ALICE, session_id="s1") == [
        "p.png"
    ]


@pytest.mark.django_db
def test_inline_bytes_live_in_data_and_the_rest_of_the_part_in_part():
    save("scan.pdf", types.Part(inline_data=types.Blob(mime_type="application/pdf", data=b"%PDF")))
    save("user:card.txt", types.Part(text="member 42"), custom_metadata={"k": "v"})

    scan = Artifact.objects.get(filename="scan.pdf")
    assert bytes(scan.data) == b"%PDF"
    assert scan.part == {"inline_data": {"mime_type": "application/pdf"}}
    assert (scan.session_id, scan.version, scan.mime_type) == ("s1", 0, "application/pdf")

    card = Artifact.objects.get(filename="user:card.txt")
    assert card.session_id == ""  # user-scoped
    assert card.data is None
    assert card.part == {"text": "member 42"}
    assert card.custom_metadata == {"k": "v"}


@pytest.mark.django_db
def test_nul_and_a_lone_surrogate_in_a_mime_type_are_stored_as_replacement_characters():
    """As every stored text: the same on both databases (PostgreSQL refuses NUL)."""
    save("a.bin", types.Part(inline_data=types.Blob(mime_type="a\x00b\ud800", data=b"1")))
    row = Artifact.objects.get(filename="a.bin")
    assert row.mime_type == "a\ufffdb\ufffd"
    loaded = artifacts.load_artifact(app_name=APP, user_id=ALICE, session_id="s1", filename="a.bin")
    assert loaded.inline_data.mime_type == "a\ufffdb\ufffd"


@pytest.mark.postgres
@pytest.mark.django_db
def test_keys_are_listed_in_code_point_order_whatever_the_databases_collation():
    """As ADK's services list them (Python's sort); a database made with an English
    locale (docker-compose's image's default) would put "B.txt" after "a.txt"."""
    from django.db import connection

    with connection.cursor() as cursor:  # undone with the test's transaction
        cursor.execute("SELECT 1 FROM pg_collation WHERE collname = 'en-US-x-icu'")
        if cursor.fetchone() is None:
            pytest.skip("needs a PostgreSQL built with ICU (its en-US collation)")
        length = Artifact._meta.get_field("filename").max_length
        cursor.execute(
            f"ALTER TABLE records_artifact ALTER COLUMN filename TYPE varchar({length}) "
            'COLLATE "en-US-x-icu"'
        )
    names = ["_notes", "a.txt", "B.txt", "user:alpha", "user:Zed"]
    for name in names:
        save(name, types.Part(text=name))
    assert artifacts.list_artifact_keys(app_name=APP, user_id=ALICE, session_id="s1") == sorted(
        names
    )
    assert artifacts.session_artifact_keys(app_name=APP, user_id=ALICE, session_id="s1") == [
        "B.txt", "_notes", "a.txt",
    ]  # fmt: skip


@pytest.mark.django_db
def test_a_canonical_uri_is_itself_a_reference_adk_resolves():
    save("user:scan.pdf", types.Part(text="first"))
    save("user:scan.pdf", types.Part(text="second"))
    version0 = artifacts.get_artifact_version(
        app_name=APP, user_id=ALICE, filename="user:scan.pdf", version=0
    )

    parsed = artifact_util.parse_artifact_uri(version0.canonical_uri)
    assert parsed == (APP, ALICE, None, "user:scan.pdf", 0)
    save("link.pdf", types.Part(file_data=types.FileData(file_uri=version0.canonical_uri)))
    loaded = artifacts.load_artifact(
        app_name=APP, user_id=ALICE, session_id="s1", filename="link.pdf"
    )
    assert loaded.text == "first"


@pytest.mark.django_db
def test_a_reference_cycle_is_refused_on_load_not_followed_forever():
    uri_of_a = artifact_util.get_artifact_uri(
        app_name=APP, user_id=ALICE, filename="a", version=0, session_id="s1"
    )
    uri_of_b = artifact_util.get_artifact_uri(
        app_name=APP, user_id=ALICE, filename="b", version=0, session_id="s1"
    )
    save("a", types.Part(file_data=types.FileData(file_uri=uri_of_b)))
    save("b", types.Part(file_data=types.FileData(file_uri=uri_of_a)))
    with pytest.raises(InputValidationError, match="depth"):
        artifacts.load_artifact(app_name=APP, user_id=ALICE, session_id="s1", filename="a")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("filename", "message"),
    [
        ("", "filename must not be empty"),
        ("   ", "filename must not be empty"),
        ("f" * 513, "filename is 513 characters long; at most 512"),
        ("a\x00b", "filename must not contain NUL"),
        ("user:", "names no file after the 'user:' prefix"),
        (7, "filename must be a string, not int"),
    ],
)
def test_bad_filenames_are_refused_with_a_clear_message(filename, message):
    with pytest.raises(InputValidationError, match=message):
        save(filename, types.Part(text="x"))
    assert not Artifact.objects.exists()


@pytest.mark.django_db
def test_a_session_scoped_name_without_a_session_says_how_to_fix_it():
    with pytest.raises(InputValidationError, match="'user:draft.txt'"):
        save("draft.txt", types.Part(text="x"), session_id=None)


@pytest.mark.django_db
def test_metadata_that_is_not_json_is_refused_and_nothing_is_written():
    with pytest.raises(InputValidationError, match="custom_metadata must be JSON"):
        save("n.txt", types.Part(text="x"), custom_metadata={"f": object()})
    assert not Artifact.objects.exists()


@pytest.mark.django_db
def test_retiring_a_session_deletes_its_artifacts_only():
    save("a.txt", types.Part(text="x"))
    save("a.txt", types.Part(text="x2"))
    save("b.txt", types.Part(text="y"))
    save("user:profile.txt", types.Part(text="shared"))
    save("c.txt", types.Part(text="other session"), session_id="s2")

    assert artifacts.session_artifact_keys(app_name=APP, user_id=ALICE, session_id="s1") == [
        "a.txt",
        "b.txt",
    ]
    assert artifacts.delete_session_artifacts(app_name=APP, user_id=ALICE, session_id="s1") == 3

    assert artifacts.list_artifact_keys(app_name=APP, user_id=ALICE, session_id="s1") == [
        "user:profile.txt"
    ]
    assert artifacts.list_artifact_keys(app_name=APP, user_id=ALICE, session_id="s2") == [
        "c.txt",
        "user:profile.txt",
    ]


@pytest.mark.django_db
def test_retiring_refuses_an_empty_session_id_rather_than_deleting_user_artifacts():
    save("user:profile.txt", types.Part(text="shared"))
    with pytest.raises(InputValidationError, match="session_id must not be empty"):
        artifacts.delete_session_artifacts(app_name=APP, user_id=ALICE, session_id="")
    assert Artifact.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_saves_get_distinct_consecutive_versions(run_in_threads):
    writers, per_writer = 4, 5
    versions = []

    def writer(n):
        def work():
            for i in range(per_writer):
                versions.append(save("user:log.txt", types.Part(text=f"{n}-{i}")))

        return work

    run_in_threads([writer(n) for n in range(writers)])

    assert sorted(versions) == list(range(writers * per_writer))
    assert artifacts.list_versions(app_name=APP, user_id=ALICE, filename="user:log.txt") == list(
        range(writers * per_writer)
    )
