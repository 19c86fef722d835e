#!/usr/bin/env bash
# Session 30, call 4: the decode attention's block-table entries loaded two turns ahead (slots2)
# and three (slots3, kTableLead = 3) against main (B) and call 3's one turn ahead (slots), the
# steps of run30b.sh (tests and profile on slots3). slots3 is main's kernel with
# table_lead3.diff applied (kTableLead = 2 in it gives the ring at two turns; slots2 was an
# equivalent hand-written two-turn version).
NEW=slots3 SIDES="B slots slots2 slots3" NAME=c exec "$(dirname "$0")/run30b.sh"
