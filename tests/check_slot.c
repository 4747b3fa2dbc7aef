#include "cvtest.h"
int main(void){return 0;}
