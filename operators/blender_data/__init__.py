"""The Blender data layer: the only code that reads and writes Blender data as numpy arrays.

Works on Blender 4.2/4.3 (legacy ``Action.fcurves``, no slots) and on 4.4+/5.x (slotted actions:
layers, strips, channelbags; ``Action.fcurves`` is gone in 5.0); the tools call these modules and
never touch animation data themselves, so API differences between Blender versions live here only.
Bulk data goes through ``foreach_get`` / ``foreach_set``, never per-key Python loops.

One module per kind of data:

==================  ===========================================================================
``channels``        :class:`~.channels.ChannelSpec` (kinds: the core's), samples made continuous
                    by their specs, data-path parsing (bone and shape-key names)
``fcurves``         an F-curve's keys: reading, sampling, writing (Bezier, dense, baked), Cycles
``actions``         actions and slots: which curves an ID or action has, which object plays an
                    action; find / new / remove curves; new, copied, assigned actions and the
                    curves a tool writes into; frame ranges; ID properties and signatures of
                    actions; checks before writing (read-only, NLA tweak mode)
``frames``          the scene's frame rate; visiting other frames and restoring the current one
``armatures``       bones, armatures playing an action, world-space joints (in cm), pose-bone
                    channels, pose writing and restoring, travel channels
``bone_rotations``  every bone's local rotation per frame as quaternions (any rotation mode),
                    posing bones from quaternions, rotation curves written in each bone's mode
``shape_keys``      shape-key curves, coordinates, blending and values (set and restored),
                    vertex animation as one key per frame
``vertex_groups``   vertex-group members, selected vertices, adding groups (Object / Edit Mode)
``meshes``          evaluated meshes over time, a mesh as arrays (rest pose, triangles), Mesh
                    Cache ranges, mesh copies, result objects, PC2 caches played by Mesh Cache
``named_channels``  the motion database's named channels of actions, setting a pose by them
``images``          numpy pixels into Image datablocks
==================  ===========================================================================

A module imports only modules above it in the table (``channels``, ``fcurves``, ``frames``,
``vertex_groups`` and ``images`` none).
"""

from . import (
    actions,
    armatures,
    bone_rotations,
    channels,
    fcurves,
    frames,
    images,
    meshes,
    named_channels,
    shape_keys,
    vertex_groups,
)
