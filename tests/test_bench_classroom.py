"""bench/classroom.py at 6 robots, as a test of behaviour (no timing assertion).

Six students with Thymio Suite's client (thymio-api, unchanged), each with a token for its own
robot only, lock their robot on one asebaplayground world, program it twice and watch it; a teacher
with an admin token watches all six without a lock. Every program runs, every write shows up in the
student's and the teacher's watch, no student sees, locks or programs another robot, no device fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.classroom import run_size
from tests.conftest import require_peer
from tests.thymio_api import require_driver

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(180)]

SIZE = 6
ROUNDS = 2
SAMPLES = 1


async def test_six_students_program_their_own_robots_and_nothing_crosses(tmp_path: Path) -> None:
    require_peer("asebaplayground")
    require_driver()
    report = await run_size(
        SIZE, tmp_path, rounds=ROUNDS, samples=SAMPLES, idle_s=0.2, per_driver=SIZE, separate_teacher=False
    )
    assert report.failures == []
    assert report.crosstalk == 0, report.crosstalk_details
    assert report.failed_programs == 0
    # Every robot ran each of its student's programs, and each student saw its own writes.
    assert sorted(report.per_robot_ms) == [f"robot-{i:02d}" for i in range(1, SIZE + 1)]
    assert all(len(times) == ROUNDS for times in report.per_robot_ms.values())
    assert len(report.student_update_ms) == SIZE * SAMPLES
    assert report.device_reconnects == 0
    # The teacher (admin token, no lock) saw every write on every robot.
    assert (report.teacher_missed, len(report.teacher_update_ms)) == (0, SIZE * SAMPLES)
    # The teacher, watching every robot without a lock, saw each one start its student's programs.
    assert report.teacher_saw_programs == SIZE
    assert report.summary()["program_to_running_ms"]["n"] == SIZE * ROUNDS
