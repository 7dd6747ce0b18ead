"""Aseba network messages and services of `asebaros_msgs` (seed 004)."""

from __future__ import annotations

from typing import Annotated

from gateway.messages.common import Time
from gateway.messages.schema import BOOL, I16, STR, U16, Array, Nested, message


@message("asebaros_msgs/AnonymousEvent")
class AnonymousEvent:
    """An Aseba event known by its number `type` only; `source` 0 when a client sends it."""

    stamp: Annotated[Time, Nested(Time)] = Time()
    source: Annotated[int, U16] = 0
    type: Annotated[int, U16] = 0
    data: Annotated[tuple[int, ...], Array(I16, max_length=258)] = ()


@message("asebaros_msgs/Event")
class Event:
    """A named Aseba event (the name is the topic's last part); `source` 0 when a client sends it."""

    stamp: Annotated[Time, Nested(Time)] = Time()
    source: Annotated[int, U16] = 0
    data: Annotated[tuple[int, ...], Array(I16, max_length=258)] = ()


@message("asebaros_msgs/Constant")
class Constant:
    """A named constant of an Aseba script."""

    name: Annotated[str, STR] = ""
    value: Annotated[int, I16] = 0


@message("asebaros_msgs/Node")
class Node:
    """An Aseba node on the network and whether it runs a script loaded through the gateway."""

    id: Annotated[int, U16] = 0
    name: Annotated[str, STR] = ""
    name_space: Annotated[str, STR] = ""
    running: Annotated[bool, BOOL] = False
    ignored: Annotated[bool, BOOL] = False
    connected: Annotated[bool, BOOL] = False


@message("asebaros_msgs/NodeDescription")
class NodeDescription:
    """The constants, events and variables of the script running on node `id`."""

    id: Annotated[int, U16] = 0
    name: Annotated[str, STR] = ""
    constants: Annotated[tuple[Constant, ...], Array(Nested(Constant))] = ()
    events: Annotated[tuple[str, ...], Array(STR)] = ()
    variables: Annotated[tuple[str, ...], Array(STR)] = ()


@message("asebaros_msgs/NodeList")
class NodeList:
    """All Aseba nodes known to the gateway."""

    nodes: Annotated[tuple[Node, ...], Array(Nested(Node))] = ()


@message("asebaros_msgs/GetDescription_Response")
class GetDescriptionResponse:
    """Answer of GetDescription."""

    description: Annotated[NodeDescription, Nested(NodeDescription)] = NodeDescription()


@message("asebaros_msgs/GetDescription", kind="service", response=GetDescriptionResponse, read_only=True)
class GetDescription:
    """Service: the description of the node (no request fields)."""


@message("asebaros_msgs/GetNodeList_Response")
class GetNodeListResponse:
    """Answer of GetNodeList."""

    nodes: Annotated[tuple[Node, ...], Array(Nested(Node))] = ()


@message("asebaros_msgs/GetNodeList", kind="service", response=GetNodeListResponse, read_only=True)
class GetNodeList:
    """Service: list the nodes; `ignored` true includes nodes being ignored."""

    ignored: Annotated[bool, BOOL] = False


@message("asebaros_msgs/GetVariable_Response")
class GetVariableResponse:
    """Answer of GetVariable: the variable's words."""

    data: Annotated[tuple[int, ...], Array(I16, max_length=32768)] = ()


@message("asebaros_msgs/GetVariable", kind="service", response=GetVariableResponse, read_only=True)
class GetVariable:
    """Service: read a variable by name."""

    variable: Annotated[str, STR] = ""


@message("asebaros_msgs/SetVariable_Response")
class SetVariableResponse:
    """Answer of SetVariable (no fields)."""


@message("asebaros_msgs/SetVariable", kind="service", response=SetVariableResponse)
class SetVariable:
    """Service: write a variable by name; `data` must have the variable's size."""

    variable: Annotated[str, STR] = ""
    data: Annotated[tuple[int, ...], Array(I16, max_length=32768)] = ()


@message("asebaros_msgs/LoadScript_Response")
class LoadScriptResponse:
    """Answer of LoadScript (no fields)."""


@message("asebaros_msgs/LoadScript", kind="service", response=LoadScriptResponse)
class LoadScript:
    """Service: load an .aesl script; `node_ids` empty loads it on all nodes."""

    file_name: Annotated[str, STR] = ""
    constants: Annotated[tuple[Constant, ...], Array(Nested(Constant))] = ()
    node_ids: Annotated[tuple[int, ...], Array(U16)] = ()
    set_as_default: Annotated[bool, BOOL] = False
