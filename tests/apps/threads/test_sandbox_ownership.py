"""The sandbox container leases on the ORM: what two server processes sharing the database see."""

from __future__ import annotations

import pytest

from apps.threads.stores import DjangoOwnershipStore
from harness.sandbox.ownership import get_ownership_store, new_owner_id

pytestmark = pytest.mark.django_db

OTHER_HOST = "elsewhere:4242:99:abcd1234"  # a live process on another host, as far as we can tell


def test_the_server_installs_the_database_store():
    assert isinstance(get_ownership_store(), DjangoOwnershipStore)


def test_a_live_lease_keeps_a_container_from_another_process():
    store = DjangoOwnershipStore()
    me = new_owner_id()
    assert store.claim("c1", OTHER_HOST, "", ttl=60)
    assert not store.claim("c1", me, "", ttl=60)
    assert store.claim("c1", OTHER_HOST, "", ttl=60)  # its owner may renew its claim


def test_one_container_per_thread_across_processes():
    store = DjangoOwnershipStore()
    me = new_owner_id()
    assert store.claim("c1", OTHER_HOST, "alice:t1", ttl=60)
    assert not store.claim("c2", me, "alice:t1", ttl=60)
    assert store.claim("c3", me, "", ttl=60)
    assert not store.assign("c3", me, "alice:t1")
    assert store.for_thread("alice:t1").container == "c1"


def test_a_lapsed_lease_or_a_dead_owner_gives_the_container_up():
    store = DjangoOwnershipStore()
    me = new_owner_id()
    assert store.claim("c1", OTHER_HOST, "bob:t1", ttl=-1)  # already lapsed
    assert store.claim("c1", me, "bob:t1", ttl=60)
    dead = me.split(":")
    dead[2] = "1"  # this host, a process start time that is not ours: a dead owner
    assert store.claim("c2", ":".join(dead), "carol:t1", ttl=600)
    assert store.claim("c3", me, "carol:t1", ttl=60)
    assert {lease.container for lease in store.leases()} == {"c1", "c3"}


def test_renew_touch_and_release():
    store = DjangoOwnershipStore()
    me = new_owner_id()
    store.claim("c1", me, "", ttl=1)
    before = store.leases()[0]
    store.renew(me, ttl=600)
    store.touch("c1")
    after = store.leases()[0]
    assert after.expires_at > before.expires_at and after.last_used >= before.last_used
    store.release("c1", OTHER_HOST)
    assert store.leases()
    store.release("c1", me)
    assert not store.leases()
