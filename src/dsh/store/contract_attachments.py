"""The attachment contract checks (part of ``dsh.store.contract.CHECKS``)."""

from __future__ import annotations

from dsh.errors import InvalidEventError, StoreClosedError
from dsh.events.attachments import Attachment, attachment_id
from dsh.store.contract_tools import ContractCheck, StoreOpener, ensure, raises

PNG_LIKE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40  # binary, every byte value, 10 KB


async def attachments_are_stored_once_by_sha256(open_store: StoreOpener) -> None:
    """``put_attachment`` returns ``sha256:<hex>``; the bytes come back exactly, after a reopen
    too, and a second put of the same bytes is a no-op; an unknown id is ``None``."""
    store = await open_store()
    first = Attachment("image/png", PNG_LIKE)
    returned = await store.put_attachment(first)
    ensure(returned == attachment_id(PNG_LIKE) == first.id, f"the id is the sha256, got {returned}")
    ensure(await store.put_attachment(Attachment("image/png", PNG_LIKE)) == returned, "a second put")
    await store.put_attachment(Attachment("image/jpeg", b"\xff\xd8\xff"))
    await store.close()
    store = await open_store()
    try:
        back = await store.get_attachment(returned)
        ensure(back == first, "the bytes and media type round-trip exactly")
        missing = "sha256:" + "0" * 64
        ensure(await store.get_attachment(missing) is None, "an attachment never stored is None")
        jpeg = await store.get_attachment(attachment_id(b"\xff\xd8\xff"))
        ensure(jpeg is not None and jpeg.media_type == "image/jpeg", "each object keeps its own type")
    finally:
        await store.close()


async def attachment_ids_and_types_are_checked(open_store: StoreOpener) -> None:
    """A malformed id or media type is refused; a closed store refuses attachments too."""
    store = await open_store()
    await raises(InvalidEventError, store.get_attachment("md5:abc"), "a malformed id")
    await raises(InvalidEventError, store.put_attachment(Attachment("png", b"x")), "a type without a slash")
    await store.close()
    await raises(StoreClosedError, store.put_attachment(Attachment("image/png", b"x")), "a closed store")


ATTACHMENT_CHECKS: tuple[ContractCheck, ...] = (
    attachments_are_stored_once_by_sha256,
    attachment_ids_and_types_are_checked,
)
