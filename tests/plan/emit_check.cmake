# SPDX-License-Identifier: BSD-3-Clause
# --emit-slurm must produce a script bash accepts (bash -n) with the sbatch lines the
# plan needs, and --emit-deck a file with every section of tiny.yaml. Run for a GPU
# cluster and for the CPU box (no GPU lines there).
function(run_plan)
  execute_process(COMMAND ${PLAN} ${ARGN} WORKING_DIRECTORY ${WORKDIR}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mini5d-plan ${ARGN} failed (${rc}):\n${out}${err}")
  endif()
endfunction()

function(check_script script nodes tasks gpu)
  execute_process(COMMAND bash -n ${script} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "bash -n ${script} failed:\n${err}")
  endif()
  file(READ ${script} text)
  foreach(re "^#!/bin/bash" "#SBATCH --nodes=${nodes}\n" "#SBATCH --ntasks-per-node=${tasks}\n"
             "#SBATCH --cpus-per-task=[0-9]+\n" "srun [^\n]*--cpu-bind=(cores|none)" "\"\\$MINI5D\" train \"\\$DECK\"")
    if(NOT text MATCHES "${re}")
      message(FATAL_ERROR "${script} lacks '${re}':\n${text}")
    endif()
  endforeach()
  if(gpu AND NOT text MATCHES "#SBATCH --gpus-per-task=1")
    message(FATAL_ERROR "${script} lacks --gpus-per-task:\n${text}")
  endif()
  if(NOT gpu AND text MATCHES "gpus-per-task")
    message(FATAL_ERROR "${script} asks for GPUs on a CPU cluster:\n${text}")
  endif()
endfunction()

function(check_deck deck)
  file(READ ${deck} text)
  foreach(sec model parallel train data output)
    if(NOT text MATCHES "(^|\n)${sec}:")
      message(FATAL_ERROR "${deck} lacks section ${sec}:\n${text}")
    endif()
  endforeach()
endfunction()

run_plan(--model ${INPUTS}/models/dense-70b.yaml --cluster ${INPUTS}/clusters/h100-sxm-8.yaml
         --nodes 4 --emit-deck plan-h100.yaml --emit-slurm plan-h100.sh)
check_script(${WORKDIR}/plan-h100.sh 4 8 TRUE)
check_deck(${WORKDIR}/plan-h100.yaml)

run_plan(--model ${INPUTS}/tiny.yaml --cluster ${INPUTS}/clusters/cpu-2core.yaml
         --global-batch 16 --emit-deck plan-cpu.yaml --scale-down --emit-slurm plan-cpu.sh)
check_script(${WORKDIR}/plan-cpu.sh 1 2 FALSE)
check_deck(${WORKDIR}/plan-cpu.yaml)
message(STATUS "emitted scripts pass bash -n; decks have every section")
