"""The shared all-or-nothing machinery (operators.common.transaction): a failed or cancelled
operator leaves no new datablock and no changed value behind."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from _bl_helpers import assert_same_state, event, ext_module, keyed, snapshot_all


@pytest.fixture
def tx_module(extension):
    return ext_module("operators.common.transaction")


def _animated_empty(name: str = "Thing"):
    ob = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(ob)
    keyed(ob, "location", np.arange(1.0, 11.0), np.linspace(0, 1, 30).reshape(10, 3))
    return ob


def test_rollback_removes_new_datablocks_and_restores_values(scene, tx_module):
    ob = _animated_empty()
    old_action = ob.animation_data.action
    ob["model"] = "before"
    before = snapshot_all()
    with pytest.raises(ValueError, match="half-way"):
        with tx_module.transaction() as tx:
            tx.keep_action(ob)
            tx.keep_item(ob, "model")
            tx.keep_item(ob, "absent")
            tx.keep(scene, "frame_end")
            new = bpy.data.actions.new("Leftover")
            old_action.use_fake_user = True  # what keep_previous_action does before a reassignment
            ob.animation_data.action = new
            ob["model"] = "after"
            ob["absent"] = 1
            scene.frame_end = 999
            mesh = bpy.data.meshes.new("LeftoverMesh")
            scene.collection.objects.link(bpy.data.objects.new("LeftoverObject", mesh))
            raise ValueError("failed half-way")
    assert_same_state(before, snapshot_all())
    assert ob.animation_data.action == old_action
    assert "Leftover" not in bpy.data.actions and "LeftoverMesh" not in bpy.data.meshes


def test_keep_action_clears_animation_data_created_on_a_still_object(scene, tx_module):
    ob = bpy.data.objects.new("Still", None)
    scene.collection.objects.link(ob)
    with pytest.raises(RuntimeError):
        with tx_module.transaction() as tx:
            tx.keep_action(ob)
            ob.animation_data_create()
            ob.animation_data.action = bpy.data.actions.new("New")
            raise RuntimeError("boom")
    assert ob.animation_data is None
    assert len(bpy.data.actions) == 0


def test_success_keeps_everything(scene, tx_module):
    ob = _animated_empty()
    with tx_module.transaction() as tx:
        tx.keep_action(ob)
        ob.animation_data.action = bpy.data.actions.new("Kept")
    assert ob.animation_data.action.name == "Kept"


def test_transactional_rolls_back_a_reported_cancel(scene, tx_module):
    class Fake:
        @tx_module.transactional
        def execute(self, context):
            bpy.data.actions.new("Refused")
            return {"CANCELLED"}

    before = snapshot_all()
    assert Fake().execute(bpy.context) == {"CANCELLED"}
    assert_same_state(before, snapshot_all())


def _stepwise_operator(fail_in: str):
    """A StepwiseOperator that creates an action in prepare and fails in ``fail_in``."""
    common = ext_module("operators.common")

    class Operator(common.StepwiseOperator):
        def report(self, kinds, message):
            self.reported = (kinds, message)

        def prepare(self, context):
            bpy.data.actions.new("FromPrepare")
            if fail_in == "prepare":
                raise common.InputError("refused in prepare")
            return object()

        def steps(self, plan):
            yield 0.5
            if fail_in == "steps":
                raise ValueError("failed in steps")
            yield 1.0

        def finish(self, context, plan):
            bpy.data.actions.new("FromFinish")
            if fail_in == "finish":
                raise ValueError("failed in finish")
            if fail_in == "finish-cancelled":
                return {"CANCELLED"}
            return {"FINISHED"}

    return Operator()


@pytest.mark.parametrize("fail_in", ["prepare", "steps", "finish", "finish-cancelled"])
def test_stepwise_operator_takes_back_what_it_wrote(scene, fail_in):
    op = _stepwise_operator(fail_in)
    before = snapshot_all()
    assert op.execute(bpy.context) == {"CANCELLED"}
    assert_same_state(before, snapshot_all())
    if fail_in != "finish-cancelled":
        kinds, message = op.reported
        assert kinds == {"ERROR"} and fail_in.split("-")[0] in message


def test_stepwise_operator_success_keeps_what_it_wrote(scene):
    op = _stepwise_operator("nowhere")
    assert op.execute(bpy.context) == {"FINISHED"}
    assert {"FromPrepare", "FromFinish"} <= set(bpy.data.actions.keys())


def test_cancelled_modal_run_takes_back_what_prepare_wrote(scene):
    """Esc during the modal run: the generator closes and what prepare created goes."""
    op = _stepwise_operator("nowhere")

    class Ctx:
        window_manager = bpy.context.window_manager
        workspace = None

    plan = op.prepare_or_report(bpy.context)
    op._plan, op._gen, op._timer = plan, op.steps(plan), None
    assert "FromPrepare" in bpy.data.actions
    assert op.modal(Ctx, event("ESC", "PRESS")) == {"CANCELLED"}
    assert "FromPrepare" not in bpy.data.actions


def test_data_removed_while_stepping_is_reported_and_taken_back(scene):
    """A ReferenceError from the steps (data read there was removed) is the 'removed' message."""
    op = _stepwise_operator("nowhere")

    def steps(plan):
        yield 0.5
        raise ReferenceError("StructRNA of type Object has been removed")

    op.steps = steps
    op.REMOVED_TEXT = "removed while working"
    before = snapshot_all()
    assert op.execute(bpy.context) == {"CANCELLED"}
    assert op.reported == ({"ERROR"}, "removed while working")
    assert_same_state(before, snapshot_all())


def test_commit_runs_the_clean_up_and_rollback_does_not(scene, tx_module):
    calls = []
    with tx_module.transaction() as tx:
        tx.on_commit(lambda: calls.append("commit"))
        tx.on_rollback(lambda: calls.append("rollback"))
    assert calls == ["commit"]
    calls.clear()
    with pytest.raises(ValueError):
        with tx_module.transaction() as tx:
            tx.on_commit(lambda: calls.append("commit"))
            tx.on_rollback(lambda: calls.append("rollback"))
            raise ValueError("no")
    assert calls == ["rollback"]
