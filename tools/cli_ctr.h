/* The CTR commands of the hetsage tool (generate --kind ctr, train/eval/
 * predict --task ctr). */
#ifndef HS_CLI_CTR_H
#define HS_CLI_CTR_H

int cmd_generate_ctr(int argc, char **argv);

#endif
